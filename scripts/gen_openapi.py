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

# (method, path, request component or None, response component or None, summary). Every route
# fathomd answers is here; tests/api/test_openapi.py walks the server's route table to check it.
# The response component "text" is Prometheus's text format.
PATHS = [
    ("get", "/healthz", None, "health_response", "Liveness: the process answers."),
    ("get", "/readyz", None, "health_response", "Readiness: database open and migrated (503 otherwise or while stopping)."),
    ("get", "/metrics", None, "text", "Prometheus metrics (text format)."),
    ("get", "/openapi.json", None, "openapi_response", "This document."),
    ("get", "/v1/version", None, "version_response", "Versions of the service, estimators and schema."),
    ("get", "/v1/presets", None, "presets_response", "Model and system presets."),
    ("get", "/v1/presets/models/{name}", None, "model", "One model preset."),
    ("get", "/v1/presets/systems/{name}", None, "llm_system", "One system preset, built-in or user."),
    ("put", "/v1/presets/systems/{name}", "llm_system", "preset_put_response", "Store a user system preset (201 created, 200 replaced); needs the bearer token when fathomd has one; built-in names are refused (409)."),
    ("delete", "/v1/presets/systems/{name}", None, "preset_delete_response", "Delete a user system preset (404 when absent, 409 for a built-in); needs the bearer token when fathomd has one."),
    ("get", "/v1/results/{hash}", None, "result_response", "A stored result by config hash (the shareable link; If-None-Match with its ETag gives 304)."),
    ("post", "/v1/transformer", "transformer_request", "transformer_response", "Analytic transformer model: parameters, FLOPs, MFU, 6ND time, GPUs, LoRA."),
    ("post", "/v1/models/from-hf-config", "hf_config", "hf_config_response", "A Hugging Face config.json read as a Fathom model object, with its parameter counts and what the reading assumed; any request also takes {\"model\": {\"hf_config\": {...}}}."),
    ("post", "/v1/estimate", "estimate_request", "estimate_response", "Step time and memory tiers of one execution (Calculon's model)."),
    ("get", "/v1/validation", None, "validation_response", "Calculon's validation against the Megatron sequence-parallelism paper (and, with ?inference=true, the serving model against measured serving throughput)."),
    ("post", "/v1/inference", "inference_request", "inference_response", "Serving: prefill and decode steps, KV cache, how many requests fit, TTFT, TPOT, tokens/s per GPU and per user, the throughput-interactivity curve, $/Mtok and joules per token."),
    ("post", "/v1/scaling", "scaling_request", "scaling_response", "Scaling-law solvers: budget to model size, loss, cost."),
    ("post", "/v1/scaling/fit", "scaling_fit_request", "scaling_fit_response", "Fit loss and parameter laws to loss-versus-compute runs."),
    ("post", "/v1/goodput/evaluate", "goodput_evaluate_request", "goodput_evaluate_response", "Pollux throughput, efficiency and goodput."),
    ("post", "/v1/goodput/optimize", "goodput_optimize_request", "goodput_optimize_response", "Batch size and accumulation maximizing goodput."),
    ("post", "/v1/goodput/fit", "goodput_fit_request", "goodput_fit_response", "Fit Pollux performance parameters to measurements."),
    ("post", "/v1/calibrate", "calibrate_request", "calibrate_response", "Fit a system's efficiency curves, network tiers and attention efficiency to measured runs, GEMMs and nccl-tests output."),
    ("post", "/v1/sweep", "sweep_request", "sweep_response", "Start an asynchronous sweep (optimal-execution search or grid); 202 when created, 200 when it already exists."),
    ("get", "/v1/sweeps", None, "sweeps_response", "Recent sweeps."),
    ("get", "/v1/sweep/{id}", None, "sweep_status_response", "A sweep's status, progress and best results (a finished one has an ETag: If-None-Match gives 304)."),
    ("delete", "/v1/sweep/{id}", None, "sweep_status_response", "Cancel a sweep."),
    ("get", "/v1/sweep/{id}/results", None, "sweep_results_response", "A sweep's results, paged (JSON or CSV): every point of a grid, the top N of a search (rows says which)."),
    ("get", "/v1/sweep/{id}/points", None, "sweep_points_response", "A search's sample of the executions that fit, for plotting."),
]


def load(name):
    with open(os.path.join(SCHEMAS, name)) as f:
        return json.load(f)


# Routes that need the bearer token when fathomd has one (FATHOM_API_TOKEN); reading never does.
GUARDED = {("post", "/v1/sweep"), ("delete", "/v1/sweep/{id}"), ("put", "/v1/presets/systems/{name}"),
           ("delete", "/v1/presets/systems/{name}")}
# GETs that carry an ETag and answer If-None-Match with a bodiless 304.
CONDITIONAL = {"/v1/results/{hash}", "/v1/sweep/{id}", "/v1/sweep/{id}/results"}
# Query parameters: (name, schema, description).
QUERY = {
    ("get", "/v1/validation"): [("inference", {"type": "string", "enum": ["true", "false"], "default": "false"},
                                 "true adds \"inference\": the serving model against presets/validation/inference_runs.json (about a second of work).")],
    ("get", "/v1/sweeps"): [("limit", {"type": "integer", "minimum": 1, "maximum": 200, "default": 50},
                             "How many of the newest sweeps.")],
    ("get", "/v1/sweep/{id}/results"): [
        ("format", {"type": "string", "enum": ["json", "csv"]},
         "json or csv; without it the Accept header chooses (RFC 9110 weights: text/csv preferred to application/json, by q or named first, gives CSV; else JSON)."),
        ("offset", {"type": "integer", "minimum": 0, "default": 0},
         "Index of the first point (a grid's points and a plan's candidates page by index, a search's ranked list by rank − 1)."),
        ("limit", {"type": "integer", "minimum": 0, "maximum": 100000, "default": 1000},
         "Points in this page.")],
}
# Other statuses an operation answers beyond 200/4XX: status -> description.
EXTRA_STATUS = {("delete", "/v1/sweep/{id}"): {"409": "The sweep is already done or failed; the error's message names its status."},
                ("put", "/v1/presets/systems/{name}"): {"409": "A built-in preset's name."},
                ("delete", "/v1/presets/systems/{name}"): {"409": "A built-in preset's name.", "404": "No such user preset."}}


def operation_id(method, path):
    """getSweepByIdResults for GET /v1/sweep/{id}/results: unique per route."""
    words = []
    for part in path.strip("/").split("/"):
        if part == "v1" or not part:
            continue
        if part.startswith("{"):
            words += ["by", part[1:-1]]
        else:
            words += part.replace(".", "-").replace("_", "-").split("-")
    return method + "".join(w[:1].upper() + w[1:] for w in words)


def build():
    components = {}
    for fn in sorted(os.listdir(SCHEMAS)):
        if fn.endswith(".json") and fn != "openapi.json":
            components[fn[:-5].replace(".", "_")] = load(fn)
    error_ref = {"$ref": "#/components/schemas/error"}
    error = {"application/json": {"schema": error_ref}}
    etag = {"ETag": {"description": "The answer's entity tag: send it back in If-None-Match to be answered 304 while it holds.",
                     "schema": {"type": "string"}}}
    paths = {}
    ids = set()
    for method, path, req, resp, summary in PATHS:
        for name in (req, resp):
            if name not in (None, "text") and name not in components:
                raise SystemExit("gen_openapi: %s %s names a schema %s that schemas/ lacks" % (method, path, name))
        if resp == "text":
            content = {"text/plain": {"schema": {"type": "string"}}}
        else:
            content = {"application/json": {"schema": {"$ref": "#/components/schemas/%s" % resp}}}
        if path == "/v1/sweep/{id}/results":
            content["text/csv"] = {"schema": {"type": "string", "description": "A header row of column names, then one row per point (RFC 4180)."}}
        ok = "202" if path == "/v1/sweep" else "201" if method == "put" else "200"
        op_id = operation_id(method, path)
        assert op_id not in ids, op_id
        ids.add(op_id)
        ok_response = {"description": "OK", "content": content}
        if method == "get" and path in CONDITIONAL:
            ok_response["headers"] = etag
        op = {"operationId": op_id, "summary": summary, "responses": {
            ok: ok_response,
            "4XX": {"description": "Refused; the error names the field and the reason.", "content": error}}}
        if ok == "202":
            op["responses"]["200"] = {"description": "Already exists", "content": content}
        if ok == "201":
            op["responses"]["200"] = {"description": "Replaced", "content": content}
        if method == "get" and path in CONDITIONAL:
            op["responses"]["304"] = {"description": "Not Modified: If-None-Match named the answer's current ETag (no body).",
                                      "headers": etag}
        if (method, path) in GUARDED:
            op["security"] = [{"bearerToken": []}, {}]
            op["responses"]["401"] = {"description": "fathomd has a token and the request did not carry it.", "content": error}
        for status, text in EXTRA_STATUS.get((method, path), {}).items():
            op["responses"][status] = {"description": text, "content": error}
        if req:
            op["requestBody"] = {"required": True, "content": {"application/json": {"schema":
                                 {"$ref": "#/components/schemas/%s" % req}}}}
        params = []
        rest = path
        while "{" in rest:
            name = rest[rest.index("{") + 1:rest.index("}")]
            params.append({"name": name, "in": "path", "required": True, "schema": {"type": "string"}})
            rest = rest[rest.index("}") + 1:]
        for name, schema, text in QUERY.get((method, path), []):
            params.append({"name": name, "in": "query", "required": False, "schema": schema, "description": text})
        if method == "get" and path in CONDITIONAL:
            params.append({"name": "If-None-Match", "in": "header", "required": False, "schema": {"type": "string"},
                           "description": "An ETag this answer carried: 304 while it still holds."})
        if params:
            op["parameters"] = params
        paths.setdefault(path, {})[method] = op
    return {
        "openapi": "3.1.0",
        "info": {"title": "Fathom", "version": "1",
                 "description": "Estimates of large-model training runs: step time, memory tiers, "
                                "fastest layouts, scaling-law budgets, cost and goodput."},
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "paths": paths,
        "components": {"schemas": components, "securitySchemes": {"bearerToken": {
            "type": "http", "scheme": "bearer",
            "description": "fathomd --api-token (FATHOM_API_TOKEN): when set, creating and cancelling sweeps and "
                           "writing user presets need Authorization: Bearer <token>; reading never does."}}},
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
