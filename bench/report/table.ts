import type { BenchReport, Figure } from "./types.js";

const num = (n: number, digits: number) =>
  n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: 0 });

function formatValue(value: number | null, unit: Figure["unit"]): string {
  if (value === null || Number.isNaN(value)) return "n/a";
  switch (unit) {
    case "ms":
      return `${num(value, value < 10 ? 2 : 1)} ms`;
    case "KB/stream":
      return `${num(value, 1)} KB`;
    case "MiB":
      return `${num(value, 1)} MiB`;
    case "streams":
      return `${num(value, 0)} streams`;
    default:
      return `${num(value, 0)}/s`;
  }
}

const formatTarget = (f: Figure) =>
  f.target ? `${f.target.op === "<=" ? "≤" : "≥"} ${formatValue(f.target.value, f.unit)}` : "";

const formatMet = (f: Figure) => (f.met === undefined ? "" : f.met ? "met" : "MISSED");

const formatLimits = (f: Figure) =>
  (f.limits ?? [])
    .map((l) => `${l.what} ${formatValue(l.value, f.unit)} → ${num(l.ratio, 2)}×`)
    .join("; ");

/** The header (machine, database, server) and one aligned row per figure. */
export function renderTable(report: BenchReport): string {
  const m = report.machine;
  const db = report.database;
  const st = db.settings;
  const lines = [
    `team-protocols bench (${report.profile}) — ${report.startedAt}, ${num(report.elapsedMs / 1000, 0)} s`,
    `machine: ${m.cores} cores (${m.cpuModel}), ${num(m.memoryBytes / 2 ** 30, 1)} GiB, ` +
      `node ${m.node}, ${m.platform}; load average ${m.loadAverage1m} at start, ` +
      `${report.loadAverage1mAtEnd} at end`,
    `database: ${db.kind} (${db.source})` +
      (st
        ? `; PostgreSQL ${st.version}, synchronous_commit=${st.synchronous_commit}, ` +
          `fsync=${st.fsync}, wal_sync_method=${st.wal_sync_method}, shared_buffers=${st.shared_buffers}`
        : ""),
    `baseline: ${db.baselineWhere ?? "not run"}`,
    `server: child process, ${report.server.transport}, DB pool ${report.server.dbPoolSize}; ` +
      `targets apply to ${report.targetsApplyTo}`,
    "",
  ];
  const header = [
    "scenario",
    "figure",
    "value",
    "target",
    "met",
    "limit (same run) → ratio",
    "notes",
  ];
  const rows = report.figures.map((f) => [
    f.scenario,
    f.figure,
    formatValue(f.value, f.unit),
    formatTarget(f),
    formatMet(f),
    formatLimits(f),
    f.note ?? "",
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 2 ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  lines.push(line(header), line(widths.map((w) => "-".repeat(w))));
  for (const r of rows) lines.push(line(r));
  const failed = Object.entries(report.scenarios).filter(([, o]) => o.status === "error");
  for (const [name, o] of failed) {
    if (o.status === "error") lines.push("", `scenario ${name} FAILED: ${o.error}`);
  }
  return `${lines.join("\n")}\n`;
}
