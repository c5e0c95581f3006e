/** What kind of tool a call is, from its name (the engine's built-ins, `server__tool` for MCP). */

const KINDS: Record<string, string> = {
  python: "code",
  bash: "shell",
  read_file: "read",
  list_files: "search",
  grep: "search",
  write_file: "edit",
  edit_file: "edit",
  activate_skill: "skill",
};

export function toolKind(name: string, custom: boolean, server = false): string {
  if (custom) return "custom";
  if (server) return "provider";
  const known = KINDS[name];
  if (known) return known;
  const mcp = /^(.+?)__(.+)$/.exec(name);
  if (mcp) return `mcp: ${mcp[1]}`;
  return "tool";
}
