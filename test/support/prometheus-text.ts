/**
 * A strict reader of the Prometheus text exposition format (version 0.0.4), written for the
 * tests: every line must be a HELP, a TYPE or a sample of a family that has both, or the
 * scrape is rejected with the line. Independent of prom-client, which only writes it.
 */
export interface Scrape {
  /** A sample's value: `name` and its labels exactly (order does not matter); undefined if absent. */
  value(name: string, labels?: Record<string, string>): number | undefined;
  /** The family's TYPE (counter, gauge, histogram, ...). */
  type(family: string): string | undefined;
  /** Every sample, as `name{a="1",b="2"}` (labels sorted) → value. */
  readonly samples: Map<string, number>;
  /** Every sample's name and labels, in order. */
  readonly entries: { name: string; labels: Record<string, string> }[];
}

const NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*";
const LABEL = `([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\\\\n]|\\\\[\\\\"n])*)"`;
const SAMPLE = new RegExp(
  `^(${NAME})(?:\\{((?:${LABEL})(?:,${LABEL})*,?)?\\})? (?<value>-?(?:[0-9.]+(?:e[+-]?[0-9]+)?|[Nn][Aa][Nn]|[+-]?[Ii][Nn][Ff]))(?: -?[0-9]+)?$`,
);
const HELP = new RegExp(`^# HELP (${NAME}) (.*)$`);
const TYPE = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`);

const key = (name: string, labels: Record<string, string>) => {
  const parts = Object.keys(labels)
    .sort()
    .map((k) => `${k}="${labels[k]}"`);
  return parts.length > 0 ? `${name}{${parts.join(",")}}` : name;
};

/** The family a sample belongs to (histogram and summary samples have suffixes). */
function familyOf(name: string, types: Map<string, string>): string | undefined {
  if (types.has(name)) return name;
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    if (name.endsWith(suffix)) {
      const base = name.slice(0, -suffix.length);
      const t = types.get(base);
      if (t === "histogram" || t === "summary") return base;
    }
  }
  return undefined;
}

export function parsePrometheusText(text: string): Scrape {
  const helps = new Set<string>();
  const types = new Map<string, string>();
  const samples = new Map<string, number>();
  const entries: { name: string; labels: Record<string, string> }[] = [];
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  for (const [i, line] of lines.entries()) {
    const where = `line ${i + 1}: ${JSON.stringify(line)}`;
    if (line === "") continue;
    const help = HELP.exec(line);
    if (help) {
      helps.add(help[1] as string);
      continue;
    }
    const type = TYPE.exec(line);
    if (type) {
      if (types.has(type[1] as string)) throw new Error(`TYPE given twice, ${where}`);
      types.set(type[1] as string, type[2] as string);
      continue;
    }
    if (line.startsWith("#")) throw new Error(`unknown comment, ${where}`);
    const sample = SAMPLE.exec(line);
    if (!sample) throw new Error(`not a sample, ${where}`);
    const name = sample[1] as string;
    const family = familyOf(name, types);
    if (!family) throw new Error(`sample before its TYPE, ${where}`);
    if (!helps.has(family)) throw new Error(`family without HELP, ${where}`);
    const labels: Record<string, string> = {};
    for (const m of (sample[2] ?? "").matchAll(new RegExp(LABEL, "g"))) {
      const value = (m[2] as string).replace(/\\(["\\n])/g, (_, c: string) =>
        c === "n" ? "\n" : c,
      );
      labels[m[1] as string] = value;
    }
    const k = key(name, labels);
    if (samples.has(k)) throw new Error(`sample given twice, ${where}`);
    entries.push({ name, labels });
    const valueText = sample.groups?.value as string;
    // Values are read as Prometheus reads them (Go's ParseFloat: NaN and Inf in any case;
    // prom-client writes "Nan").
    const lower = valueText.toLowerCase();
    samples.set(k, lower.endsWith("nan") ? Number.NaN : Number(lower.replace("inf", "Infinity")));
  }
  return {
    samples,
    entries,
    value: (name, labels = {}) => samples.get(key(name, labels)),
    type: (family) => types.get(family),
  };
}
