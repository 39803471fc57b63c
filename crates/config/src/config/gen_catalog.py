#!/usr/bin/env python3
"""Regenerate crates/config/src/config/catalog.json from pi-ai's model data.

Usage: python3 crates/config/src/config/gen_catalog.py <pi-ai dist dir> > crates/config/src/config/catalog.json

Reads `<dist>/providers/data/<provider>.json` (the data pi-ai 1.6.0 ships) for
the providers pi-rpc serves, keeps the chat models whose wire API pi-rpc
implements, and writes one model per line, grouped by provider, with all of its members.
"""
import json
import os
import sys

# The providers of pi-ai's catalog that pi-rpc serves (every one with chat models).
PROVIDERS = [
    "amazon-bedrock", "ant-ling", "anthropic", "azure", "baseten", "cerebras", "cloudflare-ai-gateway",
    "cloudflare-workers-ai", "deepseek", "fireworks", "github-copilot", "google", "groq",
    "google-vertex", "huggingface", "kimi-coding", "meta", "minimax", "minimax-cn", "mistral", "moonshotai",
    "moonshotai-cn", "nvidia", "openai", "openai-codex", "opencode", "opencode-go", "openrouter",
    "qwen-token-plan", "qwen-token-plan-cn", "qwen-token-plan-individual",
    "qwen-token-plan-individual-cn", "radius", "together", "vercel-ai-gateway", "xai", "xiaomi",
    "xiaomi-token-plan-ams", "xiaomi-token-plan-cn", "xiaomi-token-plan-sgp", "zai", "zai-coding-cn",
]
# The chat wire APIs pi-rpc implements.
APIS = {"anthropic-messages", "openai-completions", "openai-responses", "google-generative-ai",
        "mistral-conversations", "azure-openai-responses", "openai-codex-responses", "google-vertex",
        "bedrock-converse-stream", "pi-messages"}


def main():
    dist = sys.argv[1]
    data_dir = os.path.join(dist, "providers", "data")
    manifest = json.load(open(os.path.join(data_dir, ".manifest.json")))
    version = json.load(open(os.path.join(dist, "..", "package.json")))["version"]
    sections = []
    for provider in PROVIDERS:
        groups = json.load(open(os.path.join(data_dir, provider + ".json")))
        lines = []
        for group in groups.values():
            for model in group.values():
                if model.get("type") != "chat" or model.get("api") not in APIS:
                    continue
                # Every member, in pi's order: those pi-rpc does not read
                # (`type`, `promptCache`, `inputLimits`, …) are passed on as pi's model objects carry them.
                lines.append(json.dumps(model, ensure_ascii=False, separators=(",", ":")))
        if lines:
            sections.append(json.dumps(provider) + ":[\n" + ",\n".join(lines) + "\n]")
    source = (f"Transcribed from @earendil-works/pi-ai {version} dist/providers/data/*.json "
              f"(generated {manifest['generatedAt']}) by crates/config/src/config/gen_catalog.py; "
              "chat models of the providers and wire APIs pi-rpc serves.")
    out = sys.stdout
    # Grouped by provider so pi-rpc can parse one provider's models at a time.
    out.write("{\"_source\":" + json.dumps(source) + ",\n\"providers\":{\n")
    out.write(",\n".join(sections))
    out.write("}}\n")


if __name__ == "__main__":
    main()
