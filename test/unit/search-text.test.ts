import { create, type DescField, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { MessageSchema } from "../../gen/team/v1/message_pb.js";
import { searchTextOf } from "../../server/store/search-text.js";

/**
 * What full-text search indexes of each message case (server/store/search-text.ts): every
 * string a member writes, found by walking the contract, so a new case or field that the
 * rendering leaves out fails here.
 */
const oneof = MessageSchema.oneofs[0];
const cases = oneof?.fields ?? [];

/** A marker word per case and field: letters only, so the tsvector keeps it whole. */
const marker = (c: DescField, f: DescField) =>
  `zq${c.name}${f.name}`.replace(/[^a-z]/g, "").toLowerCase();

describe("search text: every message case as words", () => {
  it("covers every case of Message", () => {
    expect(cases.length).toBeGreaterThanOrEqual(15);
  });

  it.each(cases.map((c) => [c.name, c] as const))(
    "%s: every string field is searchable",
    (_, c) => {
      const fields = (c.message?.fields ?? []).filter(
        (f) => f.fieldKind === "scalar" && f.scalar === 9 /* STRING */,
      );
      const value: Record<string, string> = {};
      for (const f of fields) value[f.localName] = marker(c, f);
      const body = toBinary(
        MessageSchema,
        create(MessageSchema, { kind: { case: c.localName, value } as never }),
      );
      const words = searchTextOf(body);
      for (const f of fields) expect(words, `${c.name}.${f.name}`).toContain(marker(c, f));
    },
  );

  it("a body it cannot read back gives no words instead of failing the send", () => {
    expect(searchTextOf(new Uint8Array(16))).toBe("");
    expect(searchTextOf(Uint8Array.from([0x0a, 0x7f]))).toBe("");
  });

  it("turns U+0000, which PostgreSQL text cannot hold, into a space", () => {
    const body = toBinary(
      MessageSchema,
      create(MessageSchema, { kind: { case: "text", value: "a\0b" } }),
    );
    expect(searchTextOf(body)).toBe("text: a b");
  });
});
