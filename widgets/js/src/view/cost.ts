/**
 * The cost meter: tokens of this turn, list cost of the turn and of the session (each with what the
 * prompt cache saved, when it changed the bill), the budget as a bar with what remains, and a sparkline of
 * the cost of each turn of the session.
 */

import { formatUsd, fraction, parseMoney } from "../money";
import type { TurnState } from "../state";
import { formatCount, h, replaceChildren } from "./dom";

const SVG = "http://www.w3.org/2000/svg";
const SPARK_TURNS = 30;

export class CostMeter {
  readonly el: HTMLElement;
  private signature = "";

  constructor() {
    this.el = h("footer", { class: "ac-cost", "aria-label": "Cost of this turn" });
  }

  update(state: TurnState): void {
    const u = state.turnUsage;
    const sessionUsage = state.sessionUsage;
    const session = sessionUsage ? parseMoney(sessionUsage.list_cost) : null;
    const sessionUncached = sessionUsage ? parseMoney(sessionUsage.uncached_cost ?? sessionUsage.list_cost) : null;
    const budget = state.budget ? parseMoney(state.budget.max_list_cost) : null;
    const history = (state.context?.turn_costs ?? []).map(parseMoney);
    const signature = [u.input, u.output, u.cacheRead, u.cacheWrite, u.cost, u.uncached, session, sessionUncached, budget, history.length].join("|");
    if (signature === this.signature) return;
    this.signature = signature;
    const tokens = h(
      "span",
      { class: "ac-tokens" },
      `in ${formatCount(u.input)} · out ${formatCount(u.output)} · cache read ${formatCount(u.cacheRead)} · cache write ${formatCount(u.cacheWrite)}`,
    );
    const costs = h(
      "span",
      { class: "ac-costs" },
      h("span", { class: "ac-turn-cost" }, `turn ${formatUsd(u.cost)}`),
      cacheSaving("ac-turn-saving", u.cost, u.uncached),
      session === null ? null : h("span", { class: "ac-session-cost" }, ` · session ${formatUsd(session)}`),
      session === null || sessionUncached === null ? null : cacheSaving("ac-session-saving", session, sessionUncached),
    );
    replaceChildren(this.el, tokens, costs, budgetBar(budget, session ?? u.cost), sparkline([...history, u.cost]));
  }
}

/** The kernel's `format_cache_saving`: nothing when the cache changed nothing. */
export function cacheSavingText(cost: bigint, uncached: bigint): string | null {
  const saved = uncached - cost;
  if (saved === 0n) return null;
  const more = saved > 0n ? `saved ${formatUsd(saved)} by cache` : `${formatUsd(-saved)} more for cache writes`;
  return `uncached ${formatUsd(uncached)}, ${more}`;
}

function cacheSaving(cls: string, cost: bigint, uncached: bigint): HTMLElement | null {
  const text = cacheSavingText(cost, uncached);
  return text === null ? null : h("span", { class: `ac-cache-saving ${cls}` }, ` (${text})`);
}

function budgetBar(budget: bigint | null, spent: bigint): HTMLElement | null {
  if (budget === null || budget <= 0n) return null;
  const remaining = budget - spent > 0n ? budget - spent : 0n;
  const used = fraction(spent, budget);
  const label = `budget ${formatUsd(budget)}: ${formatUsd(remaining)} left`;
  const fill = h("div", { class: `ac-budget-fill${used >= 0.9 ? " ac-budget-low" : ""}` });
  fill.style.width = `${(used * 100).toFixed(1)}%`;
  return h(
    "span",
    { class: "ac-budget" },
    h(
      "div",
      {
        class: "ac-budget-bar",
        role: "meter",
        "aria-label": label,
        "aria-valuemin": 0,
        "aria-valuemax": 100,
        "aria-valuenow": Math.round(used * 100),
      },
      fill,
    ),
    h("span", { class: "ac-budget-label" }, label),
  );
}

function sparkline(costs: bigint[]): SVGSVGElement {
  const shown = costs.slice(-SPARK_TURNS);
  const max = shown.reduce((a, b) => (b > a ? b : a), 0n);
  const width = 4 * SPARK_TURNS;
  const height = 16;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "ac-sparkline");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", String(width));
  svg.setAttribute("height", String(height));
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `cost per turn, last ${shown.length}: ${shown.map(formatUsd).join(", ")}`);
  shown.forEach((cost, i) => {
    const bar = document.createElementNS(SVG, "rect");
    const barHeight = Math.max(1, fraction(cost, max) * height);
    bar.setAttribute("x", String(i * 4));
    bar.setAttribute("y", String(height - barHeight));
    bar.setAttribute("width", "3");
    bar.setAttribute("height", String(barHeight));
    bar.setAttribute("class", i === shown.length - 1 ? "ac-spark-current" : "ac-spark");
    const title = document.createElementNS(SVG, "title");
    title.textContent = formatUsd(cost);
    bar.append(title);
    svg.append(bar);
  });
  return svg;
}
