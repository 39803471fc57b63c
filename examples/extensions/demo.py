#!/usr/bin/env python3
"""pi-rpc demo extension (extension protocol 1; see README-extensions.md).

One file, standard library only. It shows every part of the protocol:

* registers commands, a tool and event subscriptions (`register`);
* `/demo-ask [question]` asks confirm, select and input, then notifies the answers;
* `/demo-ui [timeout=MS]` calls all nine UI methods (dialogs with an optional
  timeout) plus getEditorText, then notifies a JSON summary of the answers;
* `/demo-say TEXT` sends TEXT as a user message (starts a run, or steers one);
* `/demo-note TEXT` appends a custom message to the conversation;
* `/demo-guard on|off|ask` controls the session_before_switch /
  session_before_fork handler: `on` cancels, `ask` asks the user, `off` allows;
* `/demo-fail` fails (pi-rpc reports an `extension_error`);
* the `demo_upper` tool upper-cases text, with a partial update;
* the `tool_call` handler blocks bash commands containing `rm -rf`;
* `turn_end` updates a status entry; `agent_end` is logged on stderr.

Load it with `pi --mode rpc -e examples/extensions/demo.py`.
"""

import itertools
import json
import sys
import threading

_write_lock = threading.Lock()
_pending = {}
_pending_lock = threading.Lock()
_ids = itertools.count(1)
_state = {"guard": "off", "turns": 0}


def log(text):
    """Debug output goes to stderr (pi-rpc logs it); stdout is the protocol."""
    print(text, file=sys.stderr, flush=True)


def send(message):
    line = json.dumps(message, ensure_ascii=False)
    with _write_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def call(method, **params):
    """Ask pi-rpc something and wait for the answer."""
    request_id = "x%d" % next(_ids)
    slot = {"done": threading.Event()}
    with _pending_lock:
        _pending[request_id] = slot
    send({"type": "request", "id": request_id, "method": method, "params": params})
    slot["done"].wait()
    if "error" in slot:
        raise RuntimeError(slot["error"])
    return slot.get("result")


def tell(method, **params):
    """A request without an id: nothing comes back (fire and forget)."""
    send({"type": "request", "method": method, "params": params})


# -- UI helpers (the nine methods of the extension UI sub-protocol) ------------

def select(title, options, timeout=None):
    return call("select", title=title, options=options, **({"timeout": timeout} if timeout else {}))


def confirm(title, message, timeout=None):
    return call("confirm", title=title, message=message, **({"timeout": timeout} if timeout else {}))


def ask_input(title, placeholder=None, timeout=None):
    return call("input", title=title, placeholder=placeholder, **({"timeout": timeout} if timeout else {}))


def editor(title, prefill=None, timeout=None):
    return call("editor", title=title, prefill=prefill, **({"timeout": timeout} if timeout else {}))


def notify(message, kind="info"):
    tell("notify", message=message, notifyType=kind)


# -- commands ------------------------------------------------------------------

def cmd_ask(args):
    if not confirm("Proceed?", args or "Run the demo questions?"):
        notify("Demo cancelled", "warning")
        return
    color = select("Pick a color", ["red", "green", "blue"])
    name = ask_input("Your name", "type something...")
    notify("color=%s name=%s" % (color, name))


def cmd_ui(args):
    timeout = None
    for word in args.split():
        if word.startswith("timeout="):
            timeout = int(word[len("timeout="):])
    answers = {
        "select": select("Pick one", ["A", "B"], timeout),
        "confirm": confirm("Sure?", "Really do it?", timeout),
        "input": ask_input("Name", "type a name", timeout),
        "editor": editor("Edit", "Line 1\nLine 2", timeout),
    }
    notify("dialogs done", "warning")
    tell("setStatus", statusKey="demo", statusText="ready")
    tell("setWidget", widgetKey="demo", widgetLines=["line 1", "line 2"], widgetPlacement="belowEditor")
    tell("setTitle", title="pi demo")
    tell("set_editor_text", text="prefilled by demo")
    answers["editorText"] = call("getEditorText")
    notify("summary " + json.dumps(answers, sort_keys=True))


def cmd_say(args):
    # deliverAs only matters while a run streams; idle, the message starts a run.
    call("sendUserMessage", content=args, deliverAs="steer")


def cmd_note(args):
    call("sendMessage", customType="demo-note", content=args, display=True)


def cmd_guard(args):
    _state["guard"] = args.strip() or "on"
    notify("guard=" + _state["guard"])


def cmd_fail(_args):
    raise RuntimeError("demo-fail always fails")


COMMANDS = {
    "demo-ask": ("Ask three questions and report the answers", cmd_ask),
    "demo-ui": ("Exercise every extension UI method", cmd_ui),
    "demo-say": ("Send the arguments as a user message", cmd_say),
    "demo-note": ("Append a custom note to the conversation", cmd_note),
    "demo-guard": ("Guard session switches: on, off or ask", cmd_guard),
    "demo-fail": ("A command that fails", cmd_fail),
}


# -- tools and hooks -------------------------------------------------------------

def tool_upper(call_id, params):
    text = params.get("text", "")
    tell("toolUpdate", toolCallId=call_id, content=[{"type": "text", "text": "working..."}])
    return {"content": [{"type": "text", "text": text.upper()}], "details": {"length": len(text)}}


def on_tool_call(params):
    if params.get("toolName") == "bash" and "rm -rf" in str(params.get("input", {}).get("command", "")):
        return {"block": True, "reason": "Blocked by the demo extension: rm -rf is not allowed"}
    return None


def on_session_before(params):
    guard = _state["guard"]
    if guard == "on":
        return {"cancel": True}
    if guard == "ask":
        what = "switch" if params.get("type") == "session_before_switch" else "fork"
        return None if confirm("Allow session %s?" % what, json.dumps(params)) else {"cancel": True}
    return None


def handle_request(message):
    method, params = message.get("method"), message.get("params") or {}
    try:
        if method == "command":
            _, handler = COMMANDS[params["name"]]
            handler(params.get("args", ""))
            result = None
        elif method == "execute_tool":
            result = tool_upper(params.get("toolCallId"), params.get("input") or {})
        elif method == "tool_call":
            result = on_tool_call(params)
        elif method in ("session_before_switch", "session_before_fork"):
            result = on_session_before(params)
        else:
            raise RuntimeError("unknown method " + str(method))
        send({"type": "response", "id": message["id"], "result": result})
    except Exception as error:  # the error text reaches pi-rpc
        send({"type": "response", "id": message["id"], "error": str(error)})


def handle_event(event):
    if event.get("type") == "turn_end":
        _state["turns"] += 1
        tell("setStatus", statusKey="demo-turns", statusText="turns: %d" % _state["turns"])
    elif event.get("type") == "agent_end":
        log("agent_end with %d messages" % len(event.get("messages", [])))


def main():
    send({
        "type": "register",
        "name": "demo",
        "commands": [{"name": name, "description": desc} for name, (desc, _) in COMMANDS.items()],
        "tools": [{
            "name": "demo_upper",
            "description": "Upper-case a text",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string", "description": "Text to upper-case"}},
                "required": ["text"],
            },
        }],
        "events": ["turn_end", "agent_end", "tool_call", "session_before_switch", "session_before_fork"],
    })
    for raw in sys.stdin.buffer:
        message = json.loads(raw.decode("utf-8"))
        kind = message.get("type")
        if kind == "response":
            with _pending_lock:
                slot = _pending.pop(message.get("id"), None)
            if slot is not None:
                if message.get("error") is not None:
                    slot["error"] = message["error"]
                slot["result"] = message.get("result")
                slot["done"].set()
        elif kind == "request":
            # In a thread: a handler may wait on a dialog while we keep reading.
            threading.Thread(target=handle_request, args=(message,), daemon=True).start()
        elif kind == "event":
            handle_event(message["event"])
        elif kind == "hello":
            log("hello from pi-rpc, cwd " + str(message.get("cwd")))
    # stdin closed: pi-rpc is shutting down.


if __name__ == "__main__":
    main()
