// pi-rpc extension host: the UI an SDK session's extensions are given
// (`bindExtensions({uiContext})`, `ExtensionRunner.setUIContext`), as pi's
// runner wraps it: the questions (`select`, `confirm`, `input`, `editor`,
// `custom`) tell the extensions `ui_prompt_start` when the outermost one is
// asked and `ui_prompt_end` when it is answered (each told after the current
// step, as pi queues them), the rest of the UI passed on as given.

"use strict";

const QUESTIONS = {
	select: (ui, args) => ({ title: args[0], run: () => ui.select(...args) }),
	confirm: (ui, args) => ({ title: args[0], run: () => ui.confirm(...args) }),
	input: (ui, args) => ({ title: args[0], run: () => ui.input(...args) }),
	editor: (ui, args) => ({ title: args[0], run: () => ui.editor(...args) }),
	custom: (ui, args) => ({ title: undefined, run: () => ui.custom(...args) }),
};

/** `ui` with its questions told to `runner`'s extensions (pi's `wrapUIPromptContext`). */
function wrapUIPrompts(runner, ui) {
	let depth = 0;
	let active;
	const tell = (type, kind, title) => {
		const event = { type, reason: "ui_prompt", kind, ...(title ? { title } : {}) };
		queueMicrotask(() => void runner.emit(event));
	};
	const ask = (kind, args) => {
		const { title, run } = QUESTIONS[kind](ui, args);
		if (depth++ === 0) {
			active = { kind, title };
			tell("ui_prompt_start", kind, title);
		}
		const finish = () => {
			if (--depth > 0) return;
			depth = 0;
			const prompt = active ?? { kind, title };
			active = undefined;
			tell("ui_prompt_end", prompt.kind, prompt.title);
		};
		try {
			return run().finally(finish);
		} catch (error) {
			finish();
			throw error;
		}
	};
	const wrapped = { ...ui };
	for (const kind of Object.keys(QUESTIONS)) wrapped[kind] = (...args) => ask(kind, args);
	return wrapped;
}

module.exports = { wrapUIPrompts };
