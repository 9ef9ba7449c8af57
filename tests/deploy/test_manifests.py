"""test_manifests.py — the Kubernetes manifests in deploy/ parse and agree with the server.

What "agree" means here: every FATHOM_* name the manifests set is one `fathomd --help` lists, and
fathomd starts with those values; the container port is FATHOM_LISTEN's port and the port the
Service, the probes and the Prometheus annotations use; the probe and scrape paths answer 200 on
a running fathomd; the database file lies on the PersistentVolume; the user, port, volume and
database path are the Dockerfile's; the security settings the issue asks for are all there.
kubectl is not needed (nor available on CI): kustomization.yaml is checked by reading it.

Run: FATHOMD=build/fathomd /usr/bin/python3 -m unittest -v tests/deploy/test_manifests.py
(scripts/test.d/10-deploy.sh does). Needs python3-yaml.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import unittest

import yaml

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEPLOY = os.path.join(SOURCE, "deploy")
FATHOMD = os.environ.get("FATHOMD", os.path.join(SOURCE, "build", "fathomd"))

sys.path.insert(0, os.path.join(SOURCE, "tests", "api"))
import harness  # noqa: E402  (starts a real fathomd on a free loopback port)


def load_docs():
    """{file name: [documents]} for every YAML file in deploy/."""
    docs = {}
    for fn in sorted(os.listdir(DEPLOY)):
        if fn.endswith((".yaml", ".yml")):
            with open(os.path.join(DEPLOY, fn)) as f:
                docs[fn] = [d for d in yaml.safe_load_all(f) if d is not None]
    return docs


def fathomd_help():
    """{env name: (flag, default text)} from `fathomd --help`."""
    out = subprocess.run([FATHOMD, "--help"], capture_output=True, text=True, timeout=30, check=True)
    opts = {}
    for line in out.stdout.splitlines():
        # "  --threads   $FATHOM_THREADS   default 4" (the help text may follow on the next line)
        m = re.match(r"^\s+(--[a-z0-9-]+)\s+\$?(FATHOM_[A-Z0-9_]+)\b(.*)$", line)
        if m:
            d = re.search(r"\bdefault:?\s+([^\s)]+)", m.group(3))
            opts[m.group(2)] = (m.group(1), d.group(1) if d else None)
    return opts


def dockerfile():
    """The runtime stage's USER, EXPOSE, VOLUME and ENV from the Dockerfile."""
    with open(os.path.join(SOURCE, "Dockerfile")) as f:
        text = f.read().replace("\\\n", " ")
    runtime = re.split(r"^FROM\s", text, flags=re.M)[-1]
    out = {"env": {}, "expose": [], "volume": [], "user": None}
    for line in runtime.splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        kw = words[0].upper()
        if kw == "USER":
            out["user"] = words[1]
        elif kw == "EXPOSE":
            out["expose"] += [int(w.split("/")[0]) for w in words[1:]]
        elif kw == "VOLUME":
            out["volume"] += [w.strip('[]",') for w in words[1:]]
        elif kw == "ENV":
            for w in words[1:]:
                k, _, v = w.partition("=")
                out["env"][k] = v
    return out


QUANTITY = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
            "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40}


def quantity(q):
    m = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", str(q))
    if not m or m.group(2) not in QUANTITY:
        raise ValueError(f"not a Kubernetes quantity: {q!r}")
    return float(m.group(1)) * QUANTITY[m.group(2)]


class Manifests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.files = load_docs()
        cls.kustomization = cls.files["kustomization.yaml"][0]
        cls.objects = [d for fn, ds in cls.files.items() if fn != "kustomization.yaml" for d in ds]
        by_kind = {}
        for d in cls.objects:
            by_kind.setdefault(d.get("kind"), []).append(d)
        cls.by_kind = by_kind
        cls.sts = by_kind["StatefulSet"][0]
        cls.pod = cls.sts["spec"]["template"]
        cls.container = cls.pod["spec"]["containers"][0]
        cls.configmap = by_kind["ConfigMap"][0]
        cls.config = cls.configmap["data"]
        cls.options = fathomd_help()
        cls.docker = dockerfile()
        cls.port = cls.container_port("http")

    @classmethod
    def container_port(cls, ref):
        for p in cls.container.get("ports", []):
            if ref in (p.get("name"), p.get("containerPort")):
                return p["containerPort"]
        return None

    def setting(self, name):
        """A setting as the pod sees it: the ConfigMap's value, else fathomd's default."""
        if name in self.config:
            return self.config[name]
        return self.options[name][1]

    # ---- structure ----
    def test_every_file_parses_into_named_objects(self):
        seen = set()
        for fn, docs in self.files.items():
            self.assertTrue(docs, f"{fn} has no document")
            for d in docs:
                self.assertIsInstance(d, dict, fn)
                for key in ("apiVersion", "kind"):
                    self.assertIn(key, d, f"{fn}: a document without {key}")
                if d["kind"] != "Kustomization":
                    name = d.get("metadata", {}).get("name")
                    self.assertTrue(name, f"{fn}: {d['kind']} without metadata.name")
                    self.assertNotIn((d["kind"], name), seen, f"{fn}: {d['kind']}/{name} twice")
                    seen.add((d["kind"], name))

    def test_kustomization_lists_every_file(self):
        listed = self.kustomization.get("resources", [])
        files = sorted(fn for fn in self.files if fn != "kustomization.yaml")
        self.assertEqual(sorted(listed), files, "kustomization.yaml resources vs files in deploy/")
        names = [i["name"] for i in self.kustomization.get("images", [])]
        self.assertIn(self.container["image"].split(":")[0], names,
                      "kustomization.yaml images[] should name the container's image")

    def test_the_kinds_the_issue_asks_for(self):
        for kind in ("StatefulSet", "Service", "ConfigMap"):
            self.assertIn(kind, self.by_kind, f"no {kind} in deploy/")
        self.assertNotIn("Deployment", self.by_kind, "a Deployment could run two writers")

    # ---- one replica, one volume ----
    def test_one_replica_with_a_volume_for_the_database(self):
        spec = self.sts["spec"]
        self.assertEqual(spec.get("replicas"), 1, "SQLite is a single-writer store")
        templates = {t["metadata"]["name"]: t for t in spec.get("volumeClaimTemplates", [])}
        db_dir = os.path.dirname(self.setting("FATHOM_DB"))
        mounts = {m["mountPath"]: m["name"] for m in self.container.get("volumeMounts", [])}
        self.assertIn(db_dir, mounts, f"nothing mounted at {db_dir} (FATHOM_DB's directory)")
        claim = templates.get(mounts[db_dir])
        self.assertIsNotNone(claim, f"{db_dir} is not a volumeClaimTemplate (the data would be lost)")
        self.assertEqual(claim["spec"]["accessModes"], ["ReadWriteOnce"])
        self.assertGreater(quantity(claim["spec"]["resources"]["requests"]["storage"]), 0)

    def test_statefulset_has_its_headless_service(self):
        name = self.sts["spec"].get("serviceName")
        services = {s["metadata"]["name"]: s for s in self.by_kind["Service"]}
        self.assertIn(name, services, "serviceName must name a Service in deploy/")
        self.assertEqual(services[name]["spec"].get("clusterIP"), "None")

    def test_selectors_select_the_pod(self):
        labels = self.pod["metadata"].get("labels", {})
        sel = self.sts["spec"]["selector"]["matchLabels"]
        self.assertTrue(sel.items() <= labels.items(), f"{sel} vs pod labels {labels}")
        for svc in self.by_kind["Service"]:
            s = svc["spec"]["selector"]
            self.assertTrue(s.items() <= labels.items(), f"{svc['metadata']['name']}: {s}")

    # ---- settings ----
    def test_every_setting_is_a_fathomd_variable(self):
        self.assertTrue(self.options, f"no FATHOM_ variables parsed from {FATHOMD} --help")
        for name in self.config:
            self.assertIn(name, self.options, f"configmap.yaml: {name} is not in fathomd --help")
        for e in self.container.get("env", []):
            if e["name"].startswith("FATHOM_"):
                self.assertIn(e["name"], self.options, f"env {e['name']} is not in fathomd --help")
        self.assertNotIn("FATHOM_API_TOKEN", self.config, "a token belongs in a Secret")
        refs = [s["configMapRef"]["name"] for s in self.container.get("envFrom", [])
                if "configMapRef" in s]
        self.assertIn(self.configmap["metadata"]["name"], refs, "the container must load the ConfigMap")
        self.assertNotIn("command", self.container, "the image's ENTRYPOINT (fathomd as PID 1)")
        for arg in self.container.get("args", []):
            if arg.startswith("--"):
                flags = {f for f, _ in self.options.values()}
                self.assertIn(arg.split("=")[0], flags, f"args: {arg} is not a fathomd flag")

    def test_no_service_link_variables(self):
        # A Service named "fathom" would otherwise inject FATHOM_PORT, FATHOM_SERVICE_HOST...
        self.assertIs(self.pod["spec"].get("enableServiceLinks"), False)

    # ---- ports and paths ----
    def test_container_port_is_the_listen_port(self):
        host, _, port = self.setting("FATHOM_LISTEN").rpartition(":")
        self.assertEqual(host, "0.0.0.0", "fathomd must listen on the pod's address for probes")
        self.assertIsNotNone(self.port, "no container port named http")
        self.assertEqual(int(port), self.port)

    def test_services_target_the_container_port(self):
        for svc in self.by_kind["Service"]:
            for p in svc["spec"]["ports"]:
                target = p.get("targetPort", p["port"])
                self.assertEqual(self.container_port(target), self.port,
                                 f"{svc['metadata']['name']}: targetPort {target}")

    def test_prometheus_annotations(self):
        holders = [("pod template", self.pod)] + [(s["metadata"]["name"], s)
                                                   for s in self.by_kind["Service"]
                                                   if s["spec"].get("clusterIP") != "None"]
        for what, obj in holders:
            a = obj["metadata"].get("annotations", {})
            self.assertEqual(a.get("prometheus.io/scrape"), "true", what)
            self.assertEqual(a.get("prometheus.io/port"), str(self.port), what)
            self.assertEqual(a.get("prometheus.io/path"), "/metrics", what)

    def test_probes(self):
        c = self.container
        self.assertEqual(c["livenessProbe"]["httpGet"]["path"], "/healthz")
        self.assertEqual(c["readinessProbe"]["httpGet"]["path"], "/readyz")
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            if probe in c:
                port = c[probe]["httpGet"]["port"]
                self.assertEqual(self.container_port(port), self.port, f"{probe} port {port}")

    def test_paths_answer_on_a_running_fathomd(self):
        """fathomd started with the ConfigMap's settings (but its own port and database) accepts
        them all, and every probe and scrape path answers 200."""
        env = {k: v for k, v in self.config.items() if k not in ("FATHOM_LISTEN", "FATHOM_DB")}
        srv = harness.Server(env=env)
        try:
            srv.start()
            paths = {self.container[p]["httpGet"]["path"]
                     for p in ("startupProbe", "livenessProbe", "readinessProbe") if p in self.container}
            paths.add(self.pod["metadata"]["annotations"]["prometheus.io/path"])
            for path in sorted(paths):
                r = srv.get(path)
                self.assertEqual(r.status, 200, f"GET {path}: {r.body[:200]}")
            r = srv.get("/metrics")
            self.assertTrue(r.header("Content-Type").startswith("text/plain"), r.header("Content-Type"))
            self.assertRegex(r.body, r"(?m)^fathom_[a-z_]+", "no fathom_ metric in /metrics")
            self.assertEqual(srv.stop(), 0, "\n".join(srv.lines[-10:]))
        finally:
            srv.cleanup()

    # ---- shutdown ----
    def test_grace_period_covers_fathomd_shutdown(self):
        grace = int(self.setting("FATHOM_SHUTDOWN_GRACE"))
        pre = self.container.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
        pre_s = int(pre[-1]) if pre and pre[0].endswith("sleep") else 0
        total = self.pod["spec"].get("terminationGracePeriodSeconds", 30)
        self.assertGreater(total, pre_s + grace, f"terminationGracePeriodSeconds {total} ≤ "
                           f"preStop {pre_s} + FATHOM_SHUTDOWN_GRACE {grace}")

    # ---- security and resources ----
    def test_security_context(self):
        pod_sc = self.pod["spec"].get("securityContext", {})
        sc = self.container.get("securityContext", {})
        self.assertTrue(sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")), "runAsNonRoot")
        self.assertIs(sc.get("readOnlyRootFilesystem"), True)
        self.assertIs(sc.get("allowPrivilegeEscalation"), False)
        self.assertIn("ALL", sc.get("capabilities", {}).get("drop", []))
        self.assertFalse(sc.get("capabilities", {}).get("add"), "no capability added back")
        self.assertIs(self.pod["spec"].get("automountServiceAccountToken"), False)
        # With a read-only root, SQLite's temporary files need a writable /tmp.
        mounts = {m["mountPath"]: m["name"] for m in self.container["volumeMounts"]}
        volumes = {v["name"]: v for v in self.pod["spec"].get("volumes", [])}
        self.assertIn("/tmp", mounts)
        self.assertIn("emptyDir", volumes[mounts["/tmp"]])

    def test_resources(self):
        res = self.container.get("resources", {})
        for kind in ("cpu", "memory"):
            req = quantity(res["requests"][kind])
            lim = quantity(res["limits"][kind])
            self.assertGreater(req, 0, kind)
            self.assertLessEqual(req, lim, f"{kind}: request above limit")

    # ---- the Dockerfile ----
    def test_agrees_with_the_dockerfile(self):
        d = self.docker
        uid, _, gid = (d["user"] or "").partition(":")
        self.assertTrue(uid.isdigit(), f"Dockerfile USER {d['user']!r} must be numeric")
        pod_sc = self.pod["spec"]["securityContext"]
        self.assertEqual(pod_sc.get("runAsUser"), int(uid), "runAsUser vs Dockerfile USER")
        if gid:
            self.assertEqual(pod_sc.get("fsGroup"), int(gid), "fsGroup vs Dockerfile USER's group")
        self.assertIn(self.port, d["expose"], "Dockerfile EXPOSE")
        self.assertEqual(int(d["env"]["FATHOM_LISTEN"].rpartition(":")[2]), self.port)
        self.assertEqual(d["env"]["FATHOM_DB"], self.setting("FATHOM_DB"))
        self.assertIn(os.path.dirname(self.setting("FATHOM_DB")), d["volume"], "Dockerfile VOLUME")

    def test_healthcheck_command_reaches_every_listen_form(self):
        """The HEALTHCHECK command, run here with bash as the image runs it, against a fathomd
        listening on each form of FATHOM_LISTEN: with an IPv6 one ([::]:8080) it tried to
        connect to "[::]" and the container was never healthy."""
        with open(os.path.join(SOURCE, "Dockerfile")) as f:
            text = f.read().replace("\\\n", " ")
        cmd = json.loads(re.search(r"^HEALTHCHECK .*?\bCMD (\[.*\])$", text, re.M).group(1))
        self.assertEqual(cmd[:2], ["/bin/bash", "-c"])
        hosts = ["0.0.0.0", "127.0.0.1", "localhost"]
        try:
            with socket.socket(socket.AF_INET6) as probe:
                probe.bind(("::1", 0))
            hosts += ["[::]", "[::1]"]
        except OSError:
            pass  # no IPv6 loopback here
        for host in hosts:
            with self.subTest(host=host):
                srv = harness.Server(extra_args=["--listen", host + ":0"])
                try:
                    srv.start()
                    env = dict(os.environ, FATHOM_LISTEN="%s:%d" % (host, srv.port))
                    rc = subprocess.run(cmd, env=env, capture_output=True, timeout=30).returncode
                    self.assertEqual(rc, 0, "HEALTHCHECK failed against FATHOM_LISTEN=" + host)
                    self.assertEqual(srv.stop(), 0)
                    rc = subprocess.run(cmd, env=env, capture_output=True, timeout=30).returncode
                    self.assertNotEqual(rc, 0, "HEALTHCHECK passed with nothing listening")
                finally:
                    srv.cleanup()

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("unshare") and shutil.which("nsenter"),
                         "needs root, unshare and nsenter to run fathomd as PID 1")
    def test_healthcheck_reads_the_listen_flag_of_pid_1(self):
        """`docker run fathom --listen 0.0.0.0:9000`: the flag wins over FATHOM_LISTEN in fathomd,
        and so in the HEALTHCHECK, which reads PID 1's arguments. fathomd runs here as PID 1 of a
        PID namespace, as in the container, and the command runs inside it with FATHOM_LISTEN
        naming a port nothing listens on; it used to read only the variable, and such a
        container was never healthy."""
        with open(os.path.join(SOURCE, "Dockerfile")) as f:
            text = f.read().replace("\\\n", " ")
        cmd = json.loads(re.search(r"^HEALTHCHECK .*?\bCMD (\[.*\])$", text, re.M).group(1))
        with tempfile.TemporaryDirectory() as tmp:
            for form in ("--listen {}", "--listen={}"):
                with self.subTest(form=form):
                    with socket.socket() as s:
                        s.bind(("127.0.0.1", 0))
                        port = s.getsockname()[1]
                    listen = form.format("127.0.0.1:%d" % port).split(" ")
                    proc = subprocess.Popen(
                        ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", FATHOMD]
                        + listen + ["--db", os.path.join(tmp, "%d.db" % port),
                                    "--presets", os.path.join(SOURCE, "presets"),
                                    "--migrations", os.path.join(SOURCE, "migrations"),
                                    "--static", os.path.join(SOURCE, "static"),
                                    "--schemas", os.path.join(SOURCE, "schemas")],
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                    child = None
                    try:
                        line = proc.stderr.readline()  # the "listening" line: it serves
                        self.assertIn('"listening"', line)
                        child = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                               text=True, check=True).stdout.split()[0]
                        env = dict(os.environ, FATHOM_LISTEN="127.0.0.1:1")
                        rc = subprocess.run(["nsenter", "-t", child, "-p", "-m"] + cmd, env=env,
                                            capture_output=True, timeout=30).returncode
                        self.assertEqual(rc, 0, "HEALTHCHECK missed fathomd's " + " ".join(listen))
                    finally:  # unshare ignores SIGTERM while it waits: stop fathomd itself
                        if child:
                            os.kill(int(child), signal.SIGTERM)
                        else:
                            proc.kill()
                        proc.wait(30)
                        proc.stderr.close()


# ---------------------------------------------------------------- the PostgreSQL overlay ----

OVERLAY = os.path.join(DEPLOY, "overlays", "postgresql")


def _merge(base, patch):
    """A strategic merge as kustomize does it for these manifests: maps merge key by key (a null
    deletes the key), lists of maps with a "name" merge by name, other lists are replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            if v is None:
                out.pop(k, None)
            elif k in out:
                out[k] = _merge(out[k], v)
            else:
                out[k] = v
        return out
    if (isinstance(base, list) and isinstance(patch, list) and
            all(isinstance(x, dict) and "name" in x for x in base + patch)):
        out = list(base)
        for item in patch:
            i = next((n for n, x in enumerate(out) if x["name"] == item["name"]), None)
            if i is None:
                out.append(item)
            else:
                out[i] = _merge(out[i], item)
        return out
    return patch


def _label(obj, pairs, selectors):
    obj.setdefault("metadata", {}).setdefault("labels", {}).update(pairs)
    if not selectors:
        return
    spec = obj.get("spec", {})
    if obj["kind"] == "Service" and "selector" in spec:
        spec["selector"].update(pairs)
    elif "selector" in spec and "matchLabels" in spec["selector"]:
        spec["selector"]["matchLabels"].update(pairs)
    if "template" in spec:
        spec["template"].setdefault("metadata", {}).setdefault("labels", {}).update(pairs)


def kustomize_build(path):
    """The objects `kustomize build path` gives, for the features deploy/ uses (resources: files
    and directories; labels with includeSelectors; patches, inline or by path, merging or
    `$patch: delete`; images' newTag). Anything else in a kustomization is refused, so a new
    feature cannot pass unchecked."""
    with open(os.path.join(path, "kustomization.yaml")) as f:
        k = yaml.safe_load(f)
    known = {"apiVersion", "kind", "resources", "labels", "patches", "images"}
    unknown = set(k) - known
    if unknown:
        raise AssertionError(f"{path}: kustomization uses {sorted(unknown)}, which this test cannot build")
    objs = []
    for res in k.get("resources", []):
        full = os.path.normpath(os.path.join(path, res))
        if os.path.isdir(full):
            objs += kustomize_build(full)
        else:
            if not full.startswith(os.path.abspath(path) + os.sep):
                raise AssertionError(f"{path}: resource file {res} is outside the kustomization")
            with open(full) as f:
                objs += [d for d in yaml.safe_load_all(f) if d is not None]
    for p in k.get("patches", []):
        if "path" in p:
            with open(os.path.join(path, p["path"])) as f:
                patch = yaml.safe_load(f)
        else:
            patch = yaml.safe_load(p["patch"])
        key = (patch["kind"], patch["metadata"]["name"])
        matches = [i for i, o in enumerate(objs) if (o["kind"], o["metadata"]["name"]) == key]
        if len(matches) != 1:
            raise AssertionError(f"{path}: patch {key} matches {len(matches)} objects")
        if patch.get("$patch") == "delete":
            del objs[matches[0]]
        else:
            objs[matches[0]] = _merge(objs[matches[0]], patch)
    for lab in k.get("labels", []):
        for o in objs:
            _label(o, lab["pairs"], lab.get("includeSelectors", False))
    for img in k.get("images", []):
        for o in objs:
            for c in o.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
                if c["image"].split(":")[0] == img["name"] and "newTag" in img:
                    c["image"] = "%s:%s" % (img["name"], img["newTag"])
    return objs


class PostgreSQLOverlay(unittest.TestCase):
    """deploy/overlays/postgresql builds, and its Deployment, PDB, HPA and Secret agree with each
    other and with fathomd's flags."""

    @classmethod
    def setUpClass(cls):
        cls.objects = kustomize_build(OVERLAY)
        cls.by = {(o["kind"], o["metadata"]["name"]): o for o in cls.objects}
        cls.deploy = cls.by[("Deployment", "fathom")]
        cls.pod = cls.deploy["spec"]["template"]
        cls.container = cls.pod["spec"]["containers"][0]
        cls.options = fathomd_help()

    def selects(self, selector, labels):
        return selector.items() <= labels.items()

    def test_builds_into_the_expected_objects(self):
        self.assertEqual(len(self.by), len(self.objects), "two objects with one kind and name")
        for key in (("Deployment", "fathom"), ("PodDisruptionBudget", "fathom"),
                    ("HorizontalPodAutoscaler", "fathom"), ("Service", "fathom"),
                    ("ConfigMap", "fathom-config"), ("Secret", "fathom-db")):
            self.assertIn(key, self.by)
        self.assertNotIn(("StatefulSet", "fathom"), self.by, "the SQLite StatefulSet must be gone")
        self.assertNotIn(("Service", "fathom-headless"), self.by)
        self.assertGreaterEqual(self.deploy["spec"]["replicas"], 2)
        self.assertNotIn("volumeClaimTemplates", self.deploy["spec"])

    def test_settings_are_fathomd_flags_and_the_dsn_is_a_secret(self):
        config = self.by[("ConfigMap", "fathom-config")]["data"]
        self.assertNotIn("FATHOM_DB", config, "the DSN belongs in the Secret")
        for name in config:
            self.assertIn(name, self.options, f"ConfigMap: {name} is not in fathomd --help")
        env = {e["name"]: e for e in self.container.get("env", [])}
        for name in env:
            self.assertIn(name, self.options, f"env {name} is not in fathomd --help")
        ref = env["FATHOM_DB"]["valueFrom"]["secretKeyRef"]
        secret = self.by.get(("Secret", ref["name"]))
        self.assertIsNotNone(secret, "the trial Secret is in postgres.yaml")
        self.assertRegex(secret["stringData"][ref["key"]], r"^postgres(ql)?://",
                         "fathomd picks PostgreSQL by the DSN's scheme")
        flags = {f for f, _ in self.options.values()}
        for arg in self.container.get("args", []):
            if arg.startswith("--"):
                self.assertIn(arg.split("=")[0], flags, f"args: {arg} is not a fathomd flag")
        loads = [s["configMapRef"]["name"] for s in self.container["envFrom"] if "configMapRef" in s]
        self.assertIn("fathom-config", loads)

    def test_pdb_hpa_and_service_select_the_replicas(self):
        labels = self.pod["metadata"]["labels"]
        self.assertTrue(self.selects(self.deploy["spec"]["selector"]["matchLabels"], labels))
        pdb = self.by[("PodDisruptionBudget", "fathom")]
        self.assertTrue(self.selects(pdb["spec"]["selector"]["matchLabels"], labels))
        self.assertTrue(self.selects(self.by[("Service", "fathom")]["spec"]["selector"], labels))
        hpa = self.by[("HorizontalPodAutoscaler", "fathom")]["spec"]
        self.assertEqual((hpa["scaleTargetRef"]["kind"], hpa["scaleTargetRef"]["name"]),
                         ("Deployment", "fathom"))
        self.assertEqual([m["resource"]["name"] for m in hpa["metrics"]], ["cpu"])
        self.assertGreater(quantity(self.container["resources"]["requests"]["cpu"]), 0,
                           "an HPA on CPU utilization needs a CPU request")
        self.assertLess(pdb["spec"].get("maxUnavailable", 1), hpa["minReplicas"])
        # The trial database's pods are not the server's.
        db = self.by[("StatefulSet", "fathom-postgres")]
        self.assertFalse(self.selects(self.by[("Service", "fathom")]["spec"]["selector"],
                                      db["spec"]["template"]["metadata"]["labels"]))

    def test_probes_use_the_listen_port(self):
        port = self.container["ports"][0]
        config = self.by[("ConfigMap", "fathom-config")]["data"]
        self.assertEqual(int(config["FATHOM_LISTEN"].rpartition(":")[2]), port["containerPort"])
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            self.assertEqual(self.container[probe]["httpGet"]["port"], port["name"])
        self.assertEqual(self.container["readinessProbe"]["httpGet"]["path"], "/readyz")

    def test_startup_probe_outlasts_the_database_wait(self):
        """A pod started before its database waits FATHOM_DB_WAIT seconds before it listens: the
        startup probe must give it that long, or the kubelet restarts it mid-wait."""
        config = self.by[("ConfigMap", "fathom-config")]["data"]
        wait = int(config["FATHOM_DB_WAIT"])
        self.assertGreater(wait, 0, "replicas are meant to wait for their database")
        probe = self.container["startupProbe"]
        window = (probe.get("initialDelaySeconds", 0)
                  + probe.get("periodSeconds", 10) * probe.get("failureThreshold", 3))
        # The last try's connect_timeout (3 s) and the migrations come after the wait.
        self.assertGreater(window, wait + 10, f"startup probe {window} s vs FATHOM_DB_WAIT {wait} s")

    @unittest.skipUnless(harness.PG_DSN, "needs FATHOM_TEST_DB (a PostgreSQL server)")
    def test_fathomd_starts_with_the_overlay_settings(self):
        """fathomd takes the overlay's ConfigMap with a postgresql:// FATHOM_DB, as the pods do."""
        config = self.by[("ConfigMap", "fathom-config")]["data"]
        env = {k: v for k, v in config.items() if k != "FATHOM_LISTEN"}
        srv = harness.Server(env=env)
        try:
            srv.start()
            self.assertEqual(srv.get("/readyz").status, 200)
            self.assertEqual(srv.stop(), 0, "\n".join(srv.lines[-10:]))
        finally:
            srv.cleanup()


if __name__ == "__main__":
    unittest.main()
