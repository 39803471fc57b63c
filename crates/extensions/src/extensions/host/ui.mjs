// pi-rpc extension host: `ctx.ui`, pi's ExtensionUIContext in RPC mode.
// Dialogs and fire-and-forget calls become UI requests to pi-rpc (which the
// client sees as `extension_ui_request` / `extension:ui`); what needs a
// terminal degrades as pi documents for RPC mode (seed 000): `custom()`
// resolves to undefined, `getEditorText()` is "", `setTheme()` fails, …

import { currentTheme } from "./shims/theme.cjs";

const THEME_ERROR = "Theme switching not supported in RPC mode";

const noop = () => {};

/** What only pi's terminal UI does: nothing, in RPC mode as without a UI. */
const TERMINAL_ONLY = Object.freeze({
	getToolsExpanded: () => false,
	getAllThemes: () => [],
	getTheme: () => undefined,
	getEditorComponent: () => undefined,
	onTerminalInput: () => noop,
	setWorkingMessage: noop,
	setWorkingVisible: noop,
	setWorkingIndicator: noop,
	setHiddenThinkingLabel: noop,
	setFooter: noop,
	setHeader: noop,
	setEditorComponent: noop,
	setToolsExpanded: noop,
	addAutocompleteProvider: noop,
});

function dialogOptions(options) {
	return options && typeof options === "object" ? options : {};
}

export function createUi(channel) {
	const fire = (method, params) => channel.tell(method, params);

	/** A dialog; `fallback` when cancelled, timed out or dismissed by `signal`. */
	const dialog = (method, params, options, fallback) => {
		const { timeout, signal } = dialogOptions(options);
		if (signal?.aborted) return Promise.resolve(fallback);
		if (typeof timeout === "number" && timeout > 0) params.timeout = timeout;
		const answer = channel.request(method, params);
		const id = channel.lastRequestId();
		const normalised = answer.then(
			(value) => (value === null || value === undefined ? fallback : value),
			() => fallback,
		);
		if (!signal) return normalised;
		return new Promise((resolve) => {
			const onAbort = () => {
				channel.send({ type: "cancel", id });
				resolve(fallback);
			};
			signal.addEventListener("abort", onAbort, { once: true });
			normalised.then((value) => {
				signal.removeEventListener("abort", onAbort);
				resolve(value);
			});
		});
	};

	return {
		select: (title, options, opts) =>
			dialog("select", { title: String(title ?? ""), options: (options ?? []).map(String) }, opts, undefined),
		confirm: (title, message, opts) =>
			dialog("confirm", { title: String(title ?? ""), message: String(message ?? "") }, opts, false).then(
				(v) => v === true,
			),
		input: (title, placeholder, opts) =>
			dialog("input", { title: String(title ?? ""), placeholder: placeholder ?? undefined }, opts, undefined),
		editor: (title, prefill, opts) =>
			dialog("editor", { title: String(title ?? ""), prefill: prefill ?? undefined }, opts, undefined),
		notify: (message, type) => fire("notify", { message: String(message ?? ""), notifyType: type }),
		setStatus: (key, text) =>
			fire("setStatus", { statusKey: String(key), statusText: text === undefined || text === null ? undefined : String(text) }),
		setWidget: (key, content, options) => {
			// Only string arrays exist in RPC mode; component factories are ignored.
			if (content === undefined || content === null) {
				fire("setWidget", { widgetKey: String(key) });
			} else if (Array.isArray(content)) {
				fire("setWidget", {
					widgetKey: String(key),
					widgetLines: content.map(String),
					widgetPlacement: options?.placement,
				});
			}
		},
		setTitle: (title) => fire("setTitle", { title: String(title ?? "") }),
		setEditorText: (text) => fire("set_editor_text", { text: String(text ?? "") }),
		pasteToEditor: (text) => fire("set_editor_text", { text: String(text ?? "") }),
		getEditorText: () => "",
		setTheme: () => ({ success: false, error: THEME_ERROR }),
		// No components in RPC mode: undefined, after pi-rpc announced the (empty) prompt span.
		custom: () => channel.request("custom", {}).then(
			() => undefined,
			() => undefined,
		),
		...TERMINAL_ONLY,
		/** pi's theme in use (the settings' `theme`, loaded when first read). */
		get theme() {
			return currentTheme();
		},
	};
}

/**
 * pi's UI context of a runtime no mode has bound yet (a command's
 * `newSession({setup})` runs while the new runtime has no UI): dialogs
 * answer at once (`confirm` false, the others undefined), everything else
 * does nothing, `setTheme` fails with "UI not available".
 */
export function createDetachedUi() {
	const nothing = async () => undefined;
	return {
		select: nothing,
		confirm: async () => false,
		input: nothing,
		editor: nothing,
		custom: nothing,
		notify: noop,
		setStatus: noop,
		setWidget: noop,
		setTitle: noop,
		setEditorText: noop,
		pasteToEditor: noop,
		getEditorText: () => "",
		setTheme: () => ({ success: false, error: "UI not available" }),
		...TERMINAL_ONLY,
		get theme() {
			return currentTheme();
		},
	};
}
