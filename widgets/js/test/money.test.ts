// @vitest-environment node
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { formatUsd, fraction, parseMoney } from "../src/money";

describe("money", () => {
  it("formats like the kernel's format_usd", () => {
    // The table tests/unit/test_budget.py holds Python's format_usd to as well.
    const table = JSON.parse(readFileSync(fileURLToPath(new URL("../../../tests/fixtures/usd_formats.json", import.meta.url)), "utf8")) as { cases: [string, string][] };
    const cases = table.cases;
    expect(cases.length).toBeGreaterThan(10);
    for (const [value, expected] of cases) expect(formatUsd(parseMoney(value)), value).toBe(expected);
  });

  it("adds exactly where floats would not", () => {
    const sum = parseMoney("0.1") + parseMoney("0.2");
    expect(sum).toBe(parseMoney("0.3"));
    expect(formatUsd(sum)).toBe("$0.3");
  });

  it("treats junk as zero and clamps fractions", () => {
    expect(parseMoney("abc")).toBe(0n);
    expect(parseMoney(undefined)).toBe(0n);
    expect(fraction(parseMoney("3"), parseMoney("2"))).toBe(1);
    expect(fraction(parseMoney("0.5"), parseMoney("2"))).toBe(0.25);
    expect(fraction(1n, 0n)).toBe(0);
  });
});
