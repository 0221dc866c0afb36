import type { DescField, DescMessage, Message, MessageShape } from "@bufbuild/protobuf";
import { type Timestamp, timestampDate } from "@bufbuild/protobuf/wkt";

/**
 * A record of the contract as a tool's structuredContent shows it: what a model reads (Claude
 * Code hands the model the structuredContent, not the text) and what send_message takes.
 * Driven by the descriptors, so a field or a message kind added to the .proto files shows
 * up without an edit here:
 * - keys are the .proto field names (snake_case: `request_id`, `permission_mode`);
 * - an enum value is its word (`approved`, `lead`, `default`), as gen/words.ts spells it;
 * - a oneof is `type` (the case's field name: `shutdown_request`) with the case's fields
 *   beside it, the shape send_message's `message` takes;
 * - uint64 is a decimal string, a Timestamp an ISO date;
 * - an empty string, list or unset message is left out (nothing to read); false and 0 stay.
 */
export function plain<Desc extends DescMessage>(
  schema: Desc,
  message: MessageShape<Desc>,
): Record<string, unknown> {
  return plainMessage(schema, message as unknown as Record<string, unknown>);
}

function plainMessage(desc: DescMessage, m: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const member of desc.members) {
    if (member.kind === "oneof") {
      const selected = m[member.localName] as { case?: string; value?: unknown } | undefined;
      const field = member.fields.find((f) => f.localName === selected?.case);
      if (!field || selected?.value === undefined) continue;
      out.type = field.name;
      const value = plainField(field, selected.value);
      if (field.fieldKind === "message" && isRecord(value)) Object.assign(out, value);
      else if (value !== undefined) out[field.name] = value;
      continue;
    }
    const value = plainField(member, m[member.localName]);
    if (value !== undefined) out[member.name] = value;
  }
  return out;
}

function plainField(field: DescField, value: unknown): unknown {
  switch (field.fieldKind) {
    case "scalar":
      return plainScalar(value);
    case "enum":
      return enumWord(field.enum, value as number);
    case "message":
      return value === undefined ? undefined : plainNested(field.message, value);
    case "list": {
      const list = value as unknown[];
      if (list.length === 0) return undefined;
      return list.map((item) =>
        field.listKind === "message"
          ? plainNested(field.message, item)
          : field.listKind === "enum"
            ? enumWord(field.enum, item as number)
            : plainScalar(item),
      );
    }
    case "map":
      return Object.keys(value as object).length ? value : undefined;
  }
}

function plainNested(desc: DescMessage, value: unknown): unknown {
  if (desc.typeName === "google.protobuf.Timestamp") {
    return timestampDate(value as Timestamp).toISOString();
  }
  return plainMessage(desc, value as Message as unknown as Record<string, unknown>);
}

function plainScalar(value: unknown): unknown {
  if (typeof value === "bigint") return String(value);
  if (value === "" || value instanceof Uint8Array) return undefined;
  return value;
}

/** gen/words.ts's word: the value's name without the enum's prefix, in lower case. */
function enumWord(desc: { values: { number: number; localName: string }[] }, n: number) {
  const value = desc.values.find((v) => v.number === n);
  return value && n !== 0 ? value.localName.toLowerCase() : undefined;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
