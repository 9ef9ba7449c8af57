// lint.mjs — validates schemas/openapi.json (or the file named) against the OpenAPI 3.1
// specification's own JSON Schema, with @seriousme/openapi-schema-validator (web/'s
// devDependencies; scripts/build_web.sh installs it), and checks what the validator leaves to
// style: every operation has a unique operationId, every $ref resolves. Exits 1 with the
// errors printed when the document is not valid.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const require = createRequire(path.join(root, "web", "package.json"));
const { Validator } = await import(require.resolve("@seriousme/openapi-schema-validator"));

const file = process.argv[2] || path.join(root, "schemas", "openapi.json");
const doc = JSON.parse(readFileSync(file, "utf8"));
const validator = new Validator();
const res = await validator.validate(doc);
const problems = [];
if (!res.valid) problems.push(...[].concat(res.errors).map((e) => JSON.stringify(e)));
if (validator.version !== "3.1") problems.push(`expected OpenAPI 3.1, the validator read ${validator.version}`);
const ids = new Map();
for (const [p, ops] of Object.entries(doc.paths || {})) {
  for (const [method, op] of Object.entries(ops)) {
    if (!op.operationId) problems.push(`${method.toUpperCase()} ${p}: no operationId`);
    else if (ids.has(op.operationId)) problems.push(`operationId ${op.operationId} twice: ${ids.get(op.operationId)} and ${p}`);
    else ids.set(op.operationId, p);
  }
}
const refs = JSON.stringify(doc).match(/"\$ref":"#\/components\/schemas\/[^"]+"/g) || [];
for (const r of new Set(refs)) {
  const name = r.split("/").pop().replace(/"$/, "");
  if (!(name in doc.components.schemas)) problems.push(`${r} does not resolve`);
}
if (problems.length) {
  console.error(`${file}: not a valid OpenAPI 3.1 document:\n` + problems.join("\n"));
  process.exit(1);
}
console.log(`${file}: valid OpenAPI ${validator.version}, ${ids.size} operations`);
