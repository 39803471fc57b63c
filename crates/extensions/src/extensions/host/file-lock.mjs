// pi-rpc extension host: the lock pi 1.6.0 takes on the JSON files it
// shares with other processes (`auth.json`, `models-store.json`), taken the
// same way so that pi, pi-rpc's core (crates/auth, lock.rs) and this host
// exclude each other. pi uses `proper-lockfile`: the lock is a directory
// `<real path of the file>.lock` made with `mkdir` (atomic); its holder keeps
// the directory's mtime fresh, and one older than 30 s is taken over (its
// holder died). A held lock is waited for up to 30 s, retrying with pi's
// growing, jittered delay. As pi's file store does, the file is created
// (`{}`, mode 0600, its directory 0700) before it is locked, and written in
// place while the lock is held.

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { mkdir, realpath, rmdir, stat, utimes } from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/** pi's stale time and longest wait. */
const STALE_MS = 30_000;
/** How often a held lock's mtime is refreshed (proper-lockfile's default: half the stale time). */
const TOUCH_MS = STALE_MS / 2;
/** How the file is written: its mode applies only when it is created, as pi's. */
const WRITE_OPTIONS = { encoding: "utf-8", mode: 0o600 };

/** Take the lock on `file` (which exists); resolves with the lock directory. */
async function acquire(file) {
	const dir = `${await realpath(file)}.lock`;
	const deadline = Date.now() + STALE_MS;
	for (let retry = 0; ; ) {
		try {
			await mkdir(dir);
			return dir;
		} catch (error) {
			if (error?.code !== "EEXIST") throw error;
		}
		let mtime;
		try {
			mtime = (await stat(dir)).mtimeMs;
		} catch (error) {
			if (error?.code === "ENOENT") continue; // released meanwhile
			throw error;
		}
		if (mtime < Date.now() - STALE_MS) {
			// Its holder died: take it over.
			await rmdir(dir).catch(() => {});
			continue;
		}
		const remaining = deadline - Date.now();
		if (remaining <= 0) {
			throw Object.assign(new Error(`${file} is locked by another process (lock ${dir})`), { code: "ELOCKED" });
		}
		const base = Math.min(10 * 2 ** retry, 1000);
		retry += 1;
		await sleep(Math.min(Math.round(base * (1 + Math.random())), remaining));
	}
}

/**
 * Run `fn(content)` under pi's lock on `file`, `content` being the file's
 * text; when it resolves to `{ result, next }` with `next` a string, the
 * file is replaced by `next` before the lock is released. Resolves with
 * `result`.
 */
export async function withFileLock(file, fn) {
	await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
	if (!existsSync(file)) {
		try {
			writeFileSync(file, "{}", { ...WRITE_OPTIONS, flag: "wx" });
		} catch (error) {
			if (error?.code !== "EEXIST") throw error;
		}
	}
	const dir = await acquire(file);
	const touch = setInterval(() => {
		const now = new Date();
		utimes(dir, now, now).catch(() => {});
	}, TOUCH_MS);
	touch.unref?.();
	try {
		const content = existsSync(file) ? readFileSync(file, "utf-8") : undefined;
		const { result, next } = (await fn(content)) ?? {};
		if (typeof next === "string") writeFileSync(file, next, WRITE_OPTIONS);
		return result;
	} finally {
		clearInterval(touch);
		await rmdir(dir).catch(() => {});
	}
}
