#!/usr/bin/env python3
"""Regenerate crates/config/src/config/typed_catalog.json from pi-ai's model data.

Usage: python3 crates/config/src/config/gen_typed_catalog.py <pi-ai dist dir> > crates/config/src/config/typed_catalog.json

The non-chat models of pi-ai 1.6.0's catalog: classifiers (`models.classify()`)
and image generators (`models.generateImages()`) of codemode scripts. Each model
is kept whole (scripts see the catalog entry as pi shows it), one per line, in
pi's order: providers as pi-ai registers them, models in each provider's file order.
"""
import json
import os
import sys

TYPES = ("classifier", "image")


def main():
    dist = sys.argv[1]
    data_dir = os.path.join(dist, "providers", "data")
    version = json.load(open(os.path.join(dist, "..", "package.json")))["version"]
    lines = []
    for name in sorted(os.listdir(data_dir)):
        if not name.endswith(".json") or name.startswith("."):
            continue
        groups = json.load(open(os.path.join(data_dir, name)))
        for models in groups.values():
            for model in models.values():
                if model.get("type") in TYPES:
                    lines.append(json.dumps(model, ensure_ascii=False, separators=(",", ":")))
    out = sys.stdout
    out.write('{"_source":"pi-ai %s dist/providers/data (gen_typed_catalog.py)","models":[\n' % version)
    out.write(",\n".join(lines))
    out.write("\n]}\n")


if __name__ == "__main__":
    main()
