"""The agent's configuration: ``%model``, ``%system``, ``%tools``, ``%permissions``, ``%agent``, ``%mcp``.

Each change that alters the agent makes a new agent version, which the session pins.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any, ClassVar

from IPython.core.error import UsageError
from IPython.core.magic import line_cell_magic, line_magic, magics_class

from ...errors import AgentCellError
from ._base import MagicGroup
from .external_agent import EXTERNAL_HELP, describe, external_agent, local_agent
from .permission_rules import describe_python_tool, describe_rules, describe_sandbox, revoke_rules

__all__ = ["AgentMagics"]


def _flag(value: str) -> bool:
    if value.lower() in ("true", "yes", "on", "1"):
        return True
    if value.lower() in ("false", "no", "off", "0"):
        return False
    raise ValueError(f"expected true or false, not {value!r}")


_SETTINGS: dict[str, Any] = {
    "max_tokens": int,
    "temperature": float,
    "thinking_budget": int,
    "base_url": str,
    "images": _flag,  # images=false: a model without image input gets a placeholder for each image
    "context_window": int,
    "compact_at": float,
}
_CONFIG_MODEL = re.compile(r"^\s*AgentCell\.model\s*=")


def _ask_hidden(prompt: str) -> str | None:
    """A hidden prompt over the kernel's stdin (getpass: the key is never echoed, never in the notebook);
    None when the front end cannot answer prompts (nbclient, a headless run) or the answer is empty."""
    import getpass

    from IPython.core.error import StdinNotImplementedError

    try:
        answer = getpass.getpass(prompt)
    except (StdinNotImplementedError, EOFError, OSError):
        return None
    return answer.strip() or None


@magics_class
class AgentMagics(MagicGroup):
    TITLE: ClassVar[str] = "The agent"
    HELP: ClassVar[dict[str, str]] = {
        "model": "%model [NAME [key=value …]]  show or set the model, e.g. %model claude-sonnet-4-5 max_tokens=2048",
        "system": "%system [TEXT | --clear]  show or set the system prompt (a new agent version); %%system for a cell",
        "tools": "%tools [list | enable NAME… | disable NAME… | force NAME…]  the agent's tools; force: the next "
        "turn's first requests call these tools, one each, in order (helps small models)",
        "permissions": "%permissions [read-only | workspace-write | danger-full-access | revoke NAME… | revoke all]  "
        "what tools may do unasked, and the session's Allow-always rules; workspace-write: the file tools change "
        "files only inside the workspace, and shell commands, the python tool and the network ask",
        "agent": "%agent [show | pin VERSION | versions]  the agent and its pinned version; " + EXTERNAL_HELP,
        "mcp": "%mcp [list | add NAME -- COMMAND … | add NAME --url URL | remove NAME]  MCP servers",
        "config": "%config AgentCell[.SETTING [= VALUE]]  IPython's settings (see %config AgentCell); "
        "AgentCell.model = NAME is checked as %model NAME is",
    }

    @line_magic
    def model(self, line: str) -> None:
        """Show or set the model: %model NAME [max_tokens=N temperature=T thinking_budget=N base_url=U
        context_window=N compact_at=F]."""
        args = self._guard("model", line)
        if args is None:
            return
        try:
            if not args:
                current = self.host.session.agent.model
                settings = json.dumps(current.model_dump(exclude_defaults=True, exclude={"id"}))
                print(f"model: {current.id}  {settings}")
                return
            config: dict[str, Any] = {"id": args[0]}
            for pair in args[1:]:
                key, sep, value = pair.partition("=")
                if not sep or key not in _SETTINGS:
                    raise UsageError(f"%model: expected key=value with key in {', '.join(_SETTINGS)}; got {pair!r}")
                try:
                    config[key] = _SETTINGS[key](value)
                except ValueError:
                    raise UsageError(f"%model: {key} must be {_SETTINGS[key].__name__}, not {value!r}") from None
            self._check_model(config)
            agent = self.host.set_model(config)
            print(f"model: {agent.model.id} (agent v{agent.version})")
        except AgentCellError as exc:
            raise self._fail(exc) from None

    # A method named config would shadow the Configurable's config trait; IPython's stubs type the name
    # argument away.
    @line_magic("config")  # type: ignore[arg-type]
    def checked_config(self, line: str) -> Any:
        """IPython's ``%config``, except that ``AgentCell.model = NAME`` is checked as ``%model NAME`` is:
        IPython reports a failing setting on stderr only and carries on, so a model no provider serves
        would pass unnoticed until the next turn."""
        from IPython.core.magics.config import ConfigMagics

        if line.strip() in ("-h", "--help"):
            print(self.HELP["config"])
            return None
        if _CONFIG_MODEL.match(line):
            from traitlets.config import Config

            given = Config()
            assert self.shell is not None  # registered magics always have their shell
            exec("given." + line.strip(), self.shell.user_ns, {"given": given})  # as IPython evaluates it
            model = given.AgentCell.model
            if isinstance(model, str) and model:
                try:
                    self._check_model({"id": model})
                except AgentCellError as exc:
                    raise self._fail(exc) from None
        # Magics binds its methods when made (then its config trait hides the method of that name).
        return ConfigMagics(shell=self.shell).magics["line"]["config"](line)

    def _check_model(self, config: dict[str, Any]) -> None:
        """Refuse a model no provider can serve as configured; a missing key is asked for, hidden."""
        from ...errors import MissingKeyError

        try:
            self.host.check_model(config)
        except MissingKeyError as exc:
            key = _ask_hidden(f"{exc.key_env} for {config['id']} (kept in this kernel's memory only): ")
            if key is None:
                raise
            from ...providers.credentials import remember_key

            remember_key(exc.key_env, key)
            self.host.check_model(config)

    @line_cell_magic
    def system(self, line: str, cell: str | None = None) -> None:
        """Show or set the system prompt; %%system takes the whole cell."""
        if cell is None:
            args = self._guard("system", line)
            if args is None:
                return
            text: str | None = line.strip()
            if not text:
                print(self.host.session.agent.system or "(no system prompt)")
                return
            if text == "--clear":
                text = None
        else:
            text = cell.strip() or None
        try:
            agent = self.host.set_system(text)
        except AgentCellError as exc:
            raise self._fail(exc) from None
        print(f"system prompt {'set' if text else 'cleared'} (agent v{agent.version})")

    @line_magic
    def tools(self, line: str) -> None:
        """List, enable or disable the agent's tools."""
        args = self._guard("tools", line)
        if args is None:
            return
        from ...records.agent import ToolFilter

        try:
            session = self.host.session
            agent = session.agent
            current = next((t for t in agent.tools if isinstance(t, ToolFilter)), ToolFilter())
            available = [s.name for s in self.host.engine.tools.schemas(agent.id)]
            if not args or args[0] == "list":
                for name in available:
                    off = name in current.deny or (current.allow is not None and name not in current.allow)
                    print(f"{'  ' if off else '✓ '}{name}{'  (disabled)' if off else ''}")
                for custom in agent.custom_tools:
                    print(f"✓ {custom.name}  (answered by the client)")
                print(self._proposal_tool_line(session.record.permissions))
                return
            action, names = args[0], args[1:]
            if action == "force" and names:
                offered = session.offered_tool_names()
                if unknown := [n for n in names if n not in offered]:
                    raise UsageError(f"%tools: unknown tool {unknown[0]}; available: {', '.join(offered)}")
                self.host.next_tool_choice = tuple(names)
                print(f"the next turn starts by calling {', then '.join(names)}")
                return
            if action not in ("enable", "disable") or not names:
                raise UsageError(
                    "%tools: use `%tools list`, `%tools enable NAME…`, `%tools disable NAME…` or `%tools force NAME…`"
                )
            from ...engine.cell_proposals import NOTEBOOK_EDIT_TOOL

            if NOTEBOOK_EDIT_TOOL in names:  # a turn's own tool, not the agent's: the notebook's setting decides
                state = "False" if action == "disable" else "True"
                raise UsageError(f"%tools: {NOTEBOOK_EDIT_TOOL} follows `%config AgentCell.propose_cells = {state}`")
            unknown = sorted(set(names) - set(available))
            if unknown:
                raise UsageError(f"%tools: unknown tool {', '.join(unknown)}; available: {', '.join(available)}")
            deny = set(current.deny)
            deny = deny - set(names) if action == "enable" else deny | set(names)
            others = [t for t in agent.tools if not isinstance(t, ToolFilter)]
            new_filter = [ToolFilter(allow=current.allow, deny=sorted(deny))] if deny or current.allow else []
            updated = self.host.update_agent(tools=[*others, *new_filter])
            print(f"tools {action}d: {', '.join(names)} (agent v{updated.version})")
        except AgentCellError as exc:
            raise self._fail(exc) from None

    def _proposal_tool_line(self, preset: str) -> str:
        """``%tools``' line for ``notebook_edit``: offered with each prose turn, not kept in the agent."""
        from ...engine.cell_proposals import NOTEBOOK_EDIT_TOOL

        if preset == "read-only":
            return f"  {NOTEBOOK_EDIT_TOOL}  (not under read-only: proposing cells changes the notebook)"
        if not self.host.config.propose_cells:
            return f"  {NOTEBOOK_EDIT_TOOL}  (off: `%config AgentCell.propose_cells = True` turns it on)"
        return f"✓ {NOTEBOOK_EDIT_TOOL}  (proposes cells you accept or reject; `%fix` offers it whatever the setting)"

    @line_magic
    def permissions(self, line: str) -> None:
        """Show or set the permission preset."""
        args = self._guard("permissions", line)
        if args is None:
            return
        try:
            if not args:
                preset = self.host.session.record.permissions
                print(f"permissions: {preset}")
                print(describe_sandbox(preset))
                print(describe_python_tool(preset))
                print(describe_rules(self.host.session))
                return
            if args[0] == "revoke":
                print(revoke_rules(self.host.session, args[1:]))
                return
            self.host.session.update(permissions=args[0])  # type: ignore[arg-type]
            print(f"permissions: {args[0]}")
        except AgentCellError as exc:
            raise self._fail(exc) from None

    @line_magic
    def agent(self, line: str) -> None:
        """Show the agent and its pinned version, list versions, or pin one; or hand the notebook's messages
        to an ACP agent (``%agent acp …``) and back (``%agent local``)."""
        words = line.split()
        if words[:1] == ["acp"] and "--" in words:  # the agent's own arguments may be --help
            before, _, after = line.partition(" -- ")
            args = self._guard("agent", before)
            if args is not None:
                external_agent(self.host, ["--", *shlex.split(after)])
            return
        args = self._guard("agent", line)
        if args is None:
            return
        try:
            session = self.host.session
            action = args[0] if args else "show"
            if action == "acp":
                external_agent(self.host, args[1:])
            elif action == "local" and len(args) == 1:
                local_agent(self.host)
            elif action == "show":
                a = session.agent
                latest = self.host.engine.agents.get(a.id).version
                print(f"agent {a.name} ({a.id}) v{a.version} of {latest}; model {a.model.id}")
                print(f"system: {(a.system or '(none)')[:200]}")
                if (external := self.host.external) is not None:  # it answers instead of the model above
                    print(describe(external))
            elif action == "versions":
                for a in self.host.engine.agents.versions(session.agent.id):
                    print(f"v{a.version}  {a.updated_at:%Y-%m-%d %H:%M:%S}  model={a.model.id}")
            elif action == "pin" and len(args) == 2:
                try:
                    version = int(args[1])
                except ValueError:
                    raise UsageError(f"%agent pin: a version is a number, not {args[1]!r}") from None
                session.update(agent_version=version)
                print(f"pinned agent v{session.agent.version}")
            else:
                raise UsageError(self.HELP["agent"])
        except AgentCellError as exc:
            raise self._fail(exc) from None

    @line_magic
    def mcp(self, line: str) -> None:
        """List, add or remove the agent's MCP servers."""
        args = self._guard("mcp", line)
        if args is None:
            return
        from ...records.agent import McpServer

        try:
            agent = self.host.session.agent
            action = args[0] if args else "list"
            if action == "list":
                if not agent.mcp_servers:
                    print("no MCP servers; add one with %mcp add NAME -- COMMAND …")
                for server in agent.mcp_servers:
                    where = " ".join(server.command) if server.type == "stdio" else server.url
                    print(f"{server.name}  ({server.type})  {where}")
            elif action == "add" and len(args) >= 3:
                name = args[1]
                if args[2] == "--" and len(args) > 3:
                    server = McpServer(name=name, type="stdio", command=args[3:])
                elif args[2] == "--url" and len(args) == 4:
                    server = McpServer(name=name, type="http", url=args[3])
                else:
                    raise UsageError(self.HELP["mcp"])
                kept = [s for s in agent.mcp_servers if s.name != name]
                updated = self.host.update_agent(mcp_servers=[*kept, server])
                print(f"MCP server {name} added (agent v{updated.version})")
            elif action == "remove" and len(args) == 2:
                kept = [s for s in agent.mcp_servers if s.name != args[1]]
                if len(kept) == len(agent.mcp_servers):
                    raise UsageError(f"%mcp: no server named {args[1]!r}")
                updated = self.host.update_agent(mcp_servers=kept)
                print(f"MCP server {args[1]} removed (agent v{updated.version})")
            else:
                raise UsageError(self.HELP["mcp"])
        except ValueError as exc:  # pydantic validation of the server
            raise UsageError(f"%mcp: {exc}") from None
        except AgentCellError as exc:
            raise self._fail(exc) from None
