/**
 * The parts of the turn widget's code a page holds once, whoever brought them: `turn` (the fold and views,
 * with their CSS) and `math` (KaTeX with its fonts). The `_esm` each turn's widget carries is only a loader
 * (`loader.ts`); it finds a part here, registered by the JupyterLab / Notebook 7 extension or by an earlier
 * turn, or asks the kernel for it once. Parts are keyed by the build that made them, so a page whose
 * extension and kernel come from different installs uses the kernel's copy.
 */

import type { AnyModel, InitializeProps, RenderProps } from "@anywidget/types";
import type { KatexLike } from "./math";

declare const __AGENTCELL_BUILD__: string;

/** The build both bundles came from (a digest of the widget bundle, set by build.mjs). */
export const BUILD: string = typeof __AGENTCELL_BUILD__ === "string" ? __AGENTCELL_BUILD__ : "dev";

export type PartName = "turn" | "math";

/** What the `turn` part exports: the anywidget entry, and where it gets KaTeX from when a reply has math. */
export interface TurnPart {
  // Methods, not function properties: the widget's own props are typed with its model's traits.
  default: { initialize?(props: InitializeProps): unknown; render(props: RenderProps): unknown };
  setMathLoader?: (load: () => Promise<KatexLike>) => void;
}

export interface MathPart {
  default: KatexLike;
}

interface Parts {
  turn: TurnPart;
  math: MathPart;
}

const SHARED = Symbol.for("agentcell-widgets.parts");

/** A part this page has or is getting. While it is on its way, each model that needs it asks once too: the
 * kernel drops the question of a turn that ended before it could answer, so a later turn must ask again. */
interface Entry {
  promise: Promise<unknown>;
  arrived?: (js: string) => void;
  asked: WeakSet<AnyModel>;
  askedBy: number;
}

function shared(): Map<string, Entry> {
  const holder = globalThis as unknown as Record<symbol, Map<string, Entry> | undefined>;
  let parts = holder[SHARED];
  if (!parts) {
    parts = new Map();
    holder[SHARED] = parts;
  }
  return parts;
}

/** Offer a part this page already has (the lab extension's copy), so no turn asks the kernel for it. */
export function provide<N extends PartName>(name: N, part: () => Promise<Parts[N]>): void {
  const parts = shared();
  const key = `${BUILD}:${name}`;
  if (!parts.has(key)) parts.set(key, { promise: part(), asked: new WeakSet(), askedBy: 0 });
}

const RETRY_MS = 2000;

export interface CodeMessage {
  type: "code";
  part: PartName;
}

/** The part from this page, or from the kernel through `model` (the kernel answers a `code` message with the
 * part's module, which brings its own styles, as a binary buffer), evaluated once per page and build. With
 * `join`, a part already on its way is awaited without asking again (anywidget hands `initialize` and each
 * `render` a proxy of their own for one model, so a model cannot be recognised by its object). */
export function part<N extends PartName>(
  name: N,
  model: AnyModel,
  { join = false, evaluate = importText }: { join?: boolean; evaluate?: (js: string) => Promise<unknown> } = {},
): Promise<Parts[N]> {
  const parts = shared();
  const key = `${BUILD}:${name}`;
  let entry = parts.get(key);
  if (!entry) {
    let arrived: (js: string) => void = () => undefined;
    const promise = new Promise<string>((resolve) => (arrived = resolve)).then(evaluate);
    const created: Entry = { promise, arrived, asked: new WeakSet(), askedBy: 0 };
    entry = created;
    parts.set(key, created);
    promise.catch(() => parts.get(key) === created && parts.delete(key)); // a later turn asks again
  }
  const { arrived } = entry;
  if (arrived && !entry.asked.has(model) && !(join && entry.askedBy > 0)) {
    entry.askedBy += 1;
    entry.asked.add(model);
    const done = entry;
    let retry: ReturnType<typeof setTimeout> | undefined;
    const onMessage = (message: unknown, buffers?: DataView[]): void => {
      const m = message as Partial<CodeMessage> | null;
      if (m?.type !== "code" || m.part !== name) return;
      clearTimeout(retry);
      model.off("msg:custom", onMessage);
      if (done.arrived) {
        done.arrived = undefined; // the first answer is the one evaluated
        arrived(new TextDecoder().decode(buffers?.[0]));
      }
    };
    model.on("msg:custom", onMessage);
    // A message can be lost on its way in (ipykernel 7.3 with comms over subshells, as a hello can): ask
    // again until an answer starts. The kernel answers each widget once, so a repeat never costs a copy.
    const ask = (tries: number): void => {
      model.send({ type: "code", part: name } satisfies CodeMessage);
      if (tries > 1) retry = setTimeout(() => done.arrived && ask(tries - 1), RETRY_MS);
    };
    ask(3);
  }
  return entry.promise as Promise<Parts[N]>;
}

function importText(js: string): Promise<unknown> {
  const url = URL.createObjectURL(new Blob([js], { type: "text/javascript" }));
  return import(/* @vite-ignore */ url).finally(() => URL.revokeObjectURL(url));
}
