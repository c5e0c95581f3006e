/**
 * The cost meter: tokens of this turn, list cost of the turn and of the session, the budget as a bar
 * with what remains, and a sparkline of the cost of each turn of the session. While the turn runs it is
 * also the progress line: what the request waits for before its first token ("waiting for
 * claude-sonnet-4-5", "loading the local model"), the output streamed so far as an estimate of tokens and
 * cost, the elapsed time, and whether the budget shortened the reply.
 */

import { formatUsd, fraction, parseMoney } from "../money";
import type { TurnState, UsageSums } from "../state";
import type { UsageJson } from "../types";
import { formatCount, formatSeconds, h, replaceChildren } from "./dom";

/** Characters per token for the live estimate of output tokens (the request's usage replaces it). */
const CHARS_PER_TOKEN = 4;

/**
 * A usage's cost as the kernel's `format_cost` says it: "cost unknown" when a request's model has no list
 * price (never $0 for it), with the known part when there is one.
 */
export function usageCost(u: UsageSums): string {
  if (u.unpriced > 0) return u.cost !== 0n ? `cost unknown beyond ${formatUsd(u.cost)}` : "cost unknown";
  return formatUsd(u.cost);
}

function sessionCost(usage: UsageJson): string {
  const unpriced = typeof usage.unpriced_requests === "number" ? usage.unpriced_requests : 0;
  return usageCost({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: parseMoney(usage.list_cost), uncached: 0n, unpriced });
}

function elapsedSeconds(state: TurnState, now: number): number | null {
  // A running turn's clock only where it is live: a notebook saved mid-turn did not run on since.
  if (!state.startedAt || (state.status === "running" && !state.live)) return null;
  const start = Date.parse(state.startedAt);
  const end = state.status === "idle" ? (state.endedAt ? Date.parse(state.endedAt) : Number.NaN) : now;
  const seconds = (end - start) / 1000;
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : null;
}

/** "context: 3 turns above · 4.2k tokens": what the model saw besides the turn's prompt (the kernel's
 * `TurnFold.context_line`). */
export function contextLine(turns: number | null, tokens: number | null): string | null {
  if (turns === null) return null;
  const above = turns === 0 ? "no turns above" : `${turns} turn${turns === 1 ? "" : "s"} above`;
  if (tokens === null) return `context: ${above}`;
  const shown = tokens >= 1000 ? `${(tokens / 1000).toFixed(1)}k` : String(tokens);
  return `context: ${above} · ${shown} tokens`;
}

/** "window 45% of 200k": how much of the model's context window the conversation uses (the kernel's
 * `TurnFold.window_line`); null while either is unknown. */
export function windowLine(tokens: number | null, size: number | null): string | null {
  if (tokens === null || !size) return null;
  const shown = size >= 10_000 ? `${Math.floor(size / 1000)}k` : size.toLocaleString("en-US");
  return `window ${Math.round((100 * tokens) / size)}% of ${shown}`;
}

const SVG = "http://www.w3.org/2000/svg";
const SPARK_TURNS = 30;

export class CostMeter {
  readonly el: HTMLElement;
  private signature = "";

  constructor() {
    this.el = h("footer", { class: "ac-cost", "aria-label": "Cost of this turn" });
  }

  /** `now` (ms) drives the elapsed time; the turn view repaints the meter every second while running. */
  update(state: TurnState, now: number = Date.now()): void {
    const u = state.turnUsage;
    const sessionUsage = state.sessionUsage;
    const session = sessionUsage ? parseMoney(sessionUsage.list_cost) : null;
    const sessionUncached = sessionUsage ? parseMoney(sessionUsage.uncached_cost ?? sessionUsage.list_cost) : null;
    const budget = state.budget ? parseMoney(state.budget.max_list_cost) : null;
    const history = (state.context?.turn_costs ?? []).map(parseMoney);
    const request = state.status === "running" ? state.request : null;
    const streamed = request ? Math.round(request.streamedChars / CHARS_PER_TOKEN) : 0;
    const elapsed = elapsedSeconds(state, now);
    // Whole seconds while it runs (the clock ticks once a second), the exact figure once it ended.
    const shownElapsed = elapsed === null ? "" : formatSeconds(state.status === "running" ? Math.floor(elapsed) : elapsed);
    const signature = JSON.stringify([u.input, u.output, u.cacheRead, u.cacheWrite, String(u.cost), String(u.uncached), u.unpriced, String(session), String(sessionUncached), String(budget), history.length, request, shownElapsed, state.status, state.contextTurns, state.contextTokens, state.windowTokens, state.contextWindow]);
    if (signature === this.signature) return;
    this.signature = signature;
    const out = streamed ? `out ${formatCount(u.output)} + ~${formatCount(streamed)} streaming` : `out ${formatCount(u.output)}`;
    const tokens = h(
      "span",
      { class: "ac-tokens" },
      `in ${formatCount(u.input)} · ${out} · cache read ${formatCount(u.cacheRead)} · cache write ${formatCount(u.cacheWrite)}`,
    );
    const liveCost = streamed ? streamedCost(state, streamed) : null;
    const costs = h(
      "span",
      { class: "ac-costs" },
      h("span", { class: "ac-turn-cost" }, `turn ${usageCost(u)}${liveCost !== null ? ` + ~${formatUsd(liveCost)}` : ""}`),
      cacheSaving("ac-turn-saving", u.cost, u.uncached),
      state.sessionUsage ? h("span", { class: "ac-session-cost" }, ` · session ${sessionCost(state.sessionUsage)}`) : null,
      session === null || sessionUncached === null ? null : cacheSaving("ac-session-saving", session, sessionUncached),
    );
    const context = contextLine(state.contextTurns, state.contextTokens);
    const gauge = windowLine(state.windowTokens, state.contextWindow);
    replaceChildren(
      this.el,
      progress(state),
      context ? h("span", { class: "ac-context", title: "what the model saw besides this prompt" }, `${context} · `) : null,
      gauge ? h("span", { class: "ac-window", title: "how much of the model's context window the conversation uses" }, `${gauge} · `) : null,
      tokens,
      costs,
      shownElapsed ? h("span", { class: "ac-elapsed", title: "elapsed" }, shownElapsed) : null,
      budgetBar(budget, session ?? u.cost),
      sparkline([...history, u.cost]),
    );
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

/** Bars of the last turns' costs against the dearest of them; none while every one was free (the local and
 * scripted models), where a row of 1-pixel stubs would compare nothing and read as a stray mark. */
function sparkline(costs: bigint[]): SVGSVGElement | null {
  const shown = costs.slice(-SPARK_TURNS);
  const max = shown.reduce((a, b) => (b > a ? b : a), 0n);
  if (max === 0n) return null;
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

/** What the turn is doing right now, while it runs: waiting for its first token, or streaming. */
function progress(state: TurnState): HTMLElement | null {
  const request = state.status === "running" ? state.request : null;
  if (!request) return null;
  const said: string[] = [];
  if (!request.started) said.push(request.preparing ?? `waiting for ${request.model || state.model || "the model"}`);
  if (request.shortenedFrom !== null) {
    const limit = request.maxTokens === null ? "" : ` (at most ${formatCount(request.maxTokens)} of ${formatCount(request.shortenedFrom)} tokens)`;
    said.push(`the budget shortened this reply${limit}`);
  }
  if (!said.length) return null;
  return h("span", { class: "ac-progress", role: "status", "aria-live": "polite" }, `${said.join(" · ")}…`);
}

/** The list cost of the output streamed so far, when the context says the model's output price. */
function streamedCost(state: TurnState, tokens: number): bigint | null {
  const perMillion = state.context?.output_price_mtok;
  if (typeof perMillion !== "string" || !perMillion) return null;
  return (parseMoney(perMillion) * BigInt(tokens)) / 1_000_000n;
}
