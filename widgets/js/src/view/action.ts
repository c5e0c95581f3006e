/**
 * What a tool call would do, concretely, from its input: the headline of its approval panel and the one
 * line its card shows when folded. `$ ls -la` for the shell, the code for python, a diff for file edits,
 * the URL for fetches, the path for file reads; other tools show their input as JSON.
 */

export type ActionKind = "shell" | "code" | "diff" | "write" | "url" | "path" | "json";

export interface Action {
  kind: ActionKind;
  /** The whole action as text (the command, the code, the diff...). */
  text: string;
  /** One line for a folded card. */
  line: string;
  /** Words the model gave with the call to say why (a `description` or `reason` field), when any. */
  why: string | null;
}

const FIRST_LINE_CHARS = 120;

function field(input: Record<string, unknown>, name: string): string | null {
  const value = input[name];
  return typeof value === "string" ? value : null;
}

function firstLine(text: string): string {
  const line = text.split("\n", 1)[0] ?? "";
  const more = line.length < text.trimEnd().length ? " …" : "";
  return (line.length > FIRST_LINE_CHARS ? `${line.slice(0, FIRST_LINE_CHARS)}…` : line) + more;
}

/** A minimal unified diff of a replacement: every old line removed, every new line added. */
export function replacementDiff(path: string, before: string, after: string): string {
  const lines = [`--- ${path}`, `+++ ${path}`];
  for (const line of before.split("\n")) lines.push(`-${line}`);
  for (const line of after.split("\n")) lines.push(`+${line}`);
  return lines.join("\n");
}

export function actionOf(name: string, input: Record<string, unknown>): Action {
  const why = field(input, "description") ?? field(input, "reason");
  const make = (kind: ActionKind, text: string, line = firstLine(text)): Action => ({ kind, text, line, why });
  const command = field(input, "command");
  if (name === "bash" && command !== null) return make("shell", `$ ${command}`);
  const code = field(input, "code");
  if (name === "python" && code !== null) return make("code", code);
  const path = field(input, "path") ?? field(input, "file_path");
  if (name === "edit_file" && path !== null) {
    const diff = replacementDiff(path, field(input, "old_string") ?? "", field(input, "new_string") ?? "");
    return make("diff", diff, `edit ${path}`);
  }
  if (name === "write_file" && path !== null) {
    const content = field(input, "content") ?? "";
    return make("write", content, `write ${path} (${content.split("\n").length} lines)`);
  }
  const url = field(input, "url") ?? field(input, "uri");
  if (url !== null) return make("url", url);
  if (path !== null && Object.keys(input).length <= 3) {
    const pattern = field(input, "pattern");
    return make("path", pattern !== null ? `${pattern} in ${path}` : path);
  }
  const query = field(input, "query");
  if (query !== null && Object.keys(input).length === 1) return make("path", query);
  const json = JSON.stringify(input, null, 2);
  return make("json", json, firstLine(JSON.stringify(input)));
}
