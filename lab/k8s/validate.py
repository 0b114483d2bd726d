"""Validates the lab's Kubernetes manifests offline: core objects against the Kubernetes schemas
that PyPI's kubernetes-validate ships (strict: unknown fields refused), k6-operator's TestRun
against stacks/k8s/testrun.schema.json. Prints one line per object; exits 1 if any fails.
  python lab/k8s/validate.py <kubernetes version> file.yaml ..."""
import json
import pathlib
import sys

import jsonschema
import kubernetes_validate
import yaml

SCHEMA = json.loads((pathlib.Path(__file__).parents[2] / "stacks/k8s/testrun.schema.json").read_text())


def main(version, files):
    failed = 0
    for path in files:
        for doc in yaml.safe_load_all(pathlib.Path(path).read_text()):
            if not doc:
                continue
            what = f"{path}: {doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
            try:
                if doc.get("kind") == "TestRun":
                    jsonschema.validate(doc, SCHEMA)
                else:
                    kubernetes_validate.validate(doc, version, strict=True)
                print(f"ok   {what}")
            except (jsonschema.ValidationError, kubernetes_validate.ValidationError) as e:
                failed += 1
                where = "/".join(str(p) for p in getattr(e, "absolute_path", getattr(e, "path", [])))
                print(f"FAIL {what}: {where}: {e.message}")
            except kubernetes_validate.SchemaNotFoundError as e:
                failed += 1
                print(f"FAIL {what}: no schema for it in Kubernetes {version} ({e})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
