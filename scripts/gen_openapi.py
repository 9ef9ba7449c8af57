#!/usr/bin/env python3
"""gen_openapi.py — assembles schemas/openapi.json from the per-endpoint JSON Schemas.

The schemas in schemas/ are the source of truth; this only places them under components and
lists the paths. Run it after changing a schema; test_schemas checks the committed document is
what this script produces.  Usage: scripts/gen_openapi.py [--check]
"""
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SCHEMAS = os.path.join(ROOT, "schemas")

# (method, path, schema base name or None, summary)
PATHS = [
    ("get", "/healthz", None, "Liveness: the process answers."),
    ("get", "/readyz", None, "Readiness: database open and migrated (503 otherwise or while stopping)."),
    ("get", "/metrics", None, "Prometheus metrics (text format)."),
    ("get", "/v1/version", "version", "Versions of the service, estimators and schema."),
    ("get", "/v1/presets", "presets", "Model and system presets."),
    ("get", "/v1/presets/models/{name}", None, "One model preset."),
    ("get", "/v1/presets/systems/{name}", None, "One system preset."),
    ("get", "/v1/results/{hash}", "result", "A stored result by config hash (the shareable link)."),
    ("post", "/v1/transformer", "transformer", "Analytic transformer model: parameters, FLOPs, MFU, 6ND time, GPUs, LoRA."),
    ("post", "/v1/estimate", "estimate", "Step time and memory tiers of one execution (Calculon's model)."),
    ("get", "/v1/validation", "validation", "Calculon's validation against the Megatron sequence-parallelism paper."),
    ("post", "/v1/scaling", "scaling", "Scaling-law solvers: budget to model size, loss, cost."),
    ("post", "/v1/scaling/fit", "scaling_fit", "Fit loss and parameter laws to loss-versus-compute runs."),
    ("post", "/v1/goodput/evaluate", "goodput_evaluate", "Pollux throughput, efficiency and goodput."),
    ("post", "/v1/goodput/optimize", "goodput_optimize", "Batch size and accumulation maximizing goodput."),
    ("post", "/v1/goodput/fit", "goodput_fit", "Fit Pollux performance parameters to measurements."),
    ("post", "/v1/sweep", "sweep", "Start an asynchronous sweep (optimal-execution search or grid)."),
    ("get", "/v1/sweeps", "sweeps", "Recent sweeps."),
    ("get", "/v1/sweep/{id}", "sweep_status", "A sweep's status, progress and best results."),
    ("delete", "/v1/sweep/{id}", None, "Cancel a sweep."),
    ("get", "/v1/sweep/{id}/results", None, "Every point of a sweep, paged (JSON or CSV)."),
    ("get", "/v1/sweep/{id}/points", "sweep_points", "A search's sample of the executions that fit, for plotting."),
]


def load(name):
    with open(os.path.join(SCHEMAS, name)) as f:
        return json.load(f)


def build():
    components = {}
    for fn in sorted(os.listdir(SCHEMAS)):
        if fn.endswith(".json") and fn != "openapi.json":
            components[fn[:-5].replace(".", "_")] = load(fn)
    error_ref = {"$ref": "#/components/schemas/error"}
    paths = {}
    for method, path, base, summary in PATHS:
        req = base and os.path.exists(os.path.join(SCHEMAS, base + ".request.json"))
        resp = base and (os.path.exists(os.path.join(SCHEMAS, base + ".response.json")))
        if base and base not in ("version", "presets", "result", "sweeps", "sweep_status", "sweep_points", "validation") and not req:
            continue  # endpoint not built yet
        op = {"summary": summary, "responses": {
            "200": {"description": "OK", "content": {"application/json": {"schema":
                    {"$ref": "#/components/schemas/%s_response" % base} if resp else {}}}},
            "4XX": {"description": "Refused; the error names the field and the reason.",
                    "content": {"application/json": {"schema": error_ref}}}}}
        if req:
            op["requestBody"] = {"required": True, "content": {"application/json": {"schema":
                                 {"$ref": "#/components/schemas/%s_request" % base}}}}
        if "{" in path:
            name = path[path.index("{") + 1:path.index("}")]
            op["parameters"] = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}]
        paths.setdefault(path, {})[method] = op
    return {
        "openapi": "3.1.0",
        "info": {"title": "Fathom", "version": "1",
                 "description": "Estimates of large-model training runs: step time, memory tiers, "
                                "fastest layouts, scaling-law budgets, cost and goodput."},
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "paths": paths,
        "components": {"schemas": components},
    }


def main():
    text = json.dumps(build(), indent=2, sort_keys=False) + "\n"
    out = os.path.join(SCHEMAS, "openapi.json")
    if "--check" in sys.argv:
        with open(out) as f:
            if f.read() != text:
                print("schemas/openapi.json is out of date: run scripts/gen_openapi.py", file=sys.stderr)
                return 1
        return 0
    with open(out, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
