"""Kubernetes objects checked against the OpenAPI v3 schema of the CRD that defines them (the
operators' own CRD files in testdata/, a JSON Schema validator, no cluster). The API server prunes
fields a structural schema does not list, silently: the check refuses them too, unless the schema
keeps unknown fields (x-kubernetes-preserve-unknown-fields) or lists additionalProperties."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml


def load_crds(*folders: Path) -> dict[tuple[str, str], dict]:
    """(apiVersion, kind) -> openAPIV3Schema of every served version of every CRD in the folders."""
    out = {}
    for folder in folders:
        for path in sorted(folder.glob("*.yaml")):
            for crd in yaml.safe_load_all(path.read_text()):
                if not crd or crd.get("kind") != "CustomResourceDefinition":
                    continue
                group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
                for version in crd["spec"]["versions"]:
                    if version.get("served", True):
                        out[(f"{group}/{version['name']}", kind)] = version["schema"]["openAPIV3Schema"]
    return out


def closed(schema: dict) -> dict:
    """The schema with additionalProperties false wherever it lists properties and neither keeps
    unknown fields nor says otherwise: what the API server would prune becomes an error."""
    if not isinstance(schema, dict):
        return schema
    out = {k: (closed(v) if isinstance(v, dict) else [closed(i) for i in v] if isinstance(v, list) else v)
           for k, v in schema.items() if k != "properties"}
    if "properties" in schema:
        out["properties"] = {k: closed(v) for k, v in schema["properties"].items()}
        if "additionalProperties" not in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    return out


def crd_errors(obj: dict, crds: dict[tuple[str, str], dict]) -> list[str]:
    """Why the object does not fit its CRD's schema ([] when it does); an object whose apiVersion
    and kind no CRD defines is an error too."""
    schema = crds.get((obj.get("apiVersion"), obj.get("kind")))
    if schema is None:
        return [f"no CRD defines {obj.get('apiVersion')} {obj.get('kind')}"]
    body = {k: v for k, v in obj.items() if k != "metadata"}  # ObjectMeta is the API server's, not the CRD's
    validator = jsonschema.Draft7Validator(closed(schema))
    return [f"{obj['kind']} {obj.get('metadata', {}).get('name')}: {'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(body)]
