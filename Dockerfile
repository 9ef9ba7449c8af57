# Dockerfile — Fathom's container image: fathomd (and the fathom CLI) on debian:bookworm-slim.
#
# Two stages. "build" has the compilers, the -dev packages and Node (for the web page's bundle);
# it builds everything, runs the unit tests (a failing test fails the image build) and stages the
# files to ship under /stage. The runtime stage starts again from bookworm-slim and gets only the
# shared libraries fathomd links, the two binaries and the data directories (static/, presets/,
# migrations/, schemas/), so it holds no compiler, no headers and no Node.
#
# tests/image/test_image.sh builds this file with podman and runs the result (see deploy/README.md).
#
#   docker build -t fathom .
#   docker run -p 8080:8080 -v fathom-data:/data fathom
#
# Build arguments: FATHOM_CMAKE_ARGS adds CMake options (e.g. -DFATHOM_CORE_MODULES=...), JOBS
# caps the parallel build (default: every core).

# ---------------------------------------------------------------------------------------------
FROM debian:bookworm-slim AS build
ARG DEBIAN_FRONTEND=noninteractive
# The same packages as scripts/deps.sh's "run" list, minus curl, plus Node for the page's bundle.
# ca-certificates: npm talks HTTPS to its registry.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config ca-certificates \
      libmicrohttpd-dev libjansson-dev libsqlite3-dev libpq-dev libuv1-dev libsodium-dev libgsl-dev \
      libnlopt-dev libcmocka-dev \
      nodejs npm \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY . /src

# The page's third-party code (Chart.js into static/vendor/), when the project has that script.
# Behind a proxy that re-signs TLS, npm must trust the proxy's CA: pass the build host's CA bundle
# as the secret build_ca (`--secret id=build_ca,src=/etc/ssl/certs/ca-certificates.crt`; the
# image test does). A secret is mounted for this step only and stays out of every layer.
RUN --mount=type=secret,id=build_ca,target=/run/secrets/build_ca \
    if [ -f scripts/build_web.sh ]; then \
      if [ -s /run/secrets/build_ca ]; then export NPM_CONFIG_CAFILE=/run/secrets/build_ca; fi; \
      bash scripts/build_web.sh; \
    fi

ARG FATHOM_CMAKE_ARGS=""
ARG JOBS=""
# FATHOM_DATADIR is compiled in: it is where an installed fathomd looks for presets/, static/,
# migrations/ and schemas/ when neither a flag nor ./<dir> names them. RelWithDebInfo is the
# build type scripts/test checks (-O2, same warnings under -Werror); the binaries are stripped.
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
          -DFATHOM_DATADIR=/usr/local/share/fathom ${FATHOM_CMAKE_ARGS} \
 && cmake --build /build -j"${JOBS:-$(nproc)}" \
 && ctest --test-dir /build -L unit --output-on-failure -j"${JOBS:-$(nproc)}"

# What the runtime stage gets, laid out as it will be installed.
RUN mkdir -p /stage/usr/local/bin /stage/usr/local/share/fathom \
 && install -m 0755 -s /build/fathomd /build/fathom /stage/usr/local/bin/ \
 && for d in static presets migrations schemas; do \
      mkdir -p "/stage/usr/local/share/fathom/$d"; \
      if [ -d "$d" ]; then cp -R "$d/." "/stage/usr/local/share/fathom/$d/"; fi; \
    done

# ---------------------------------------------------------------------------------------------
FROM debian:bookworm-slim
ARG DEBIAN_FRONTEND=noninteractive
# Runtime libraries only (the -dev packages of the build stage minus the headers and compilers).
# apt's lists and caches (77 MB) are removed in the same layer so they never reach the image.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libmicrohttpd12 libjansson4 libsqlite3-0 libpq5 libuv1 libsodium23 libgsl27 libgslcblas0 libnlopt0 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin

# A fixed numeric user: Kubernetes' runAsNonRoot can only verify a numeric USER, and
# deploy/statefulset.yaml's runAsUser/fsGroup name the same id. /data is the only place the
# service writes (the SQLite file and its -wal/-shm companions).
RUN groupadd --system --gid 10001 fathom \
 && useradd --system --uid 10001 --gid 10001 --home-dir /data --no-create-home \
      --shell /usr/sbin/nologin fathom \
 && mkdir -p /data \
 && chown 10001:10001 /data

COPY --from=build /stage/ /

ENV FATHOM_DB=/data/fathom.db \
    FATHOM_LISTEN=0.0.0.0:8080
VOLUME /data
EXPOSE 8080
USER 10001:10001

# Health: GET /readyz, which is 200 only while the database is open and fathomd is not shutting
# down (what `depends_on: condition: service_healthy` wants). The runtime stage has no curl and
# fathomd has no client mode, so the request is made with bash's /dev/tcp (bash is part of every
# Debian base image, and /dev/tcp is bash's own, not a device file): a plain HTTP/1.0 GET on the
# address fathomd listens on (an IPv6 one without its brackets; the loopback address when it is
# 0.0.0.0 or [::]), healthy when the status line says 200. That address is PID 1's --listen flag
# when `docker run fathom --listen ...` gave one (fathomd is PID 1: its arguments are in
# /proc/1/cmdline, and the flag wins over the variable as in fathomd), else FATHOM_LISTEN. This adds nothing to the image;
# installing curl would add about 20 shared libraries (TLS, LDAP, SSH...) only for this.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/bin/bash", "-c", "l=${FATHOM_LISTEN:-127.0.0.1:8080}; mapfile -d '' a </proc/1/cmdline; for ((i = 1; i < ${#a[@]}; i++)); do case ${a[i]} in --listen) l=${a[i+1]};; --listen=*) l=${a[i]#--listen=};; esac; done; h=${l%:*}; h=${h#[}; h=${h%]}; case $h in 0.0.0.0) h=127.0.0.1;; ::) h=::1;; esac; exec 3<>/dev/tcp/$h/${l##*:} && printf 'GET /readyz HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && IFS=' ' read -r -t 4 _ code _ <&3 && [ \"$code\" = 200 ]"]

# Exec form: fathomd is PID 1 and gets SIGTERM itself (docker stop, Kubernetes). It handles it:
# /readyz fails at once, new connections are refused, requests in flight finish within
# --shutdown-grace, sweeps checkpoint, the database closes; a second signal skips the grace.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/fathomd"]
