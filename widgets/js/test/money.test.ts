import { describe, expect, it } from "vitest";
import { formatUsd, fraction, parseMoney } from "../src/money";

describe("money", () => {
  it("formats like the kernel's format_usd", () => {
    // Expected strings are Python's format_usd on the same Decimals.
    const cases: [string, string][] = [
      ["0", "$0"],
      ["0.000123", "$0.000123"],
      ["0.0000125", "$0.000012"],
      ["0.0000135", "$0.000014"],
      ["1.25", "$1.25"],
      ["0.01", "$0.01"],
      ["2", "$2"],
      ["0.12345", "$0.1234"],
      ["12.5000", "$12.5"],
      ["3E-7", "$0"],
    ];
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
