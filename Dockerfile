# rollplane's container image (docs/container-image.md).
#
#   podman build -t rollplane:0.1.0 --build-arg VERSION=0.1.0 --build-arg REVISION="$(git rev-parse HEAD)" .
#   scripts/image.sh build      the same, with every argument derived from package.json and git
#
# Two stages: `build` installs every dependency, builds dist/ (server, CLI and web UI), packs the package as `npm pack`
# does and installs its production dependencies into it with `npm ci --omit=dev` (better-sqlite3 compiled from
# source); the final stage holds Node.js and that package, and runs as a numeric non-root user on a read-only root
# file system. BASE is any Debian-based image with Node.js 20 or later:
# the public Node.js 20 slim image by default; CI passes one built from Debian's own packages (scripts/image.sh).
ARG BASE=docker.io/library/node:20-slim

FROM ${BASE} AS build
# better-sqlite3 is compiled here instead of fetching a prebuilt binary: it needs a C++ toolchain and Node.js's headers.
# The official Node.js images bring npm and the headers; Debian's own nodejs package has them as separate packages.
RUN set -eu; \
    pkgs="python3 make g++"; \
    command -v npm >/dev/null || pkgs="$pkgs npm"; \
    [ -f "$(node -p 'require("path").resolve(process.execPath, "../../include/node/node.h")')" ] || pkgs="$pkgs libnode-dev"; \
    apt-get update -qq; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pkgs >/dev/null; \
    rm -rf /var/lib/apt/lists/*
# A TLS-intercepting proxy's CA, when the registry is only reachable through one (CI passes it; empty otherwise).
ARG NODE_EXTRA_CA_CERTS=
ENV npm_config_build_from_source=true \
    npm_config_update_notifier=false \
    npm_config_fund=false \
    npm_config_audit=false
WORKDIR /src
COPY package.json package-lock.json ./
# Every dependency, for the build. No install script runs: the build loads no native addon, and `prepare` (the build)
# needs the sources, copied next.
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json schema.graphql README.md CHANGELOG.md ./
COPY scripts scripts
COPY prisma prisma
COPY bin bin
COPY src src
ARG REVISION=unknown
# dist/ (server, CLI, web UI), then the package exactly as `npm pack` makes it (package.json's "files"), unpacked. Its
# `prepare` finds dist/ current and builds nothing again.
RUN ROLLPLANE_REVISION="$REVISION" npm run build \
    && npm pack --silent --pack-destination /tmp >/dev/null \
    && mkdir /app \
    && tar -xzf /tmp/rollplane-*.tgz -C /app --strip-components=1 \
    && cp package-lock.json /app/
WORKDIR /app
# Its production dependencies, as the lockfile pins them: `npm ci --omit=dev` (its `prepare` builds nothing: dist/ is in
# the package). better-sqlite3 compiles here. Then what nothing loads at run time goes: type declarations, source
# maps, and the addon's sources and objects.
RUN npm_config_nodedir="$(node -p 'require("path").resolve(process.execPath, "../..")')" npm ci --omit=dev \
    && find node_modules -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' \) -delete \
    && cd node_modules/better-sqlite3 \
    && rm -rf deps src build/deps build/Release/obj build/Release/obj.target build/Release/.deps build/Release/test_extension.node

FROM ${BASE}
ARG VERSION=unknown
ARG REVISION=unknown
ARG SOURCE=unknown
LABEL org.opencontainers.image.title="rollplane" \
      org.opencontainers.image.description="Rollout control plane for Kubernetes fleets" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}"
COPY --from=build /app /app
WORKDIR /app
# `rollplane …` on the PATH (e.g. `kubectl exec deploy/rollplane -- rollplane --version`), and the data folder the
# manifests mount a volume on, writable by the numeric user the manifests run as.
RUN ln -s /app/bin/rollplane.js /usr/local/bin/rollplane \
    && mkdir -p /var/lib/rollplane \
    && chown 10001:10001 /var/lib/rollplane
VOLUME /var/lib/rollplane
# Outside a cluster the image serves on every address (so authentication is on) with its history in the volume, and
# drives the embedded Kubernetes simulator unless a kubeconfig or a service account is mounted.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=4000 \
    DATABASE_URL=file:/var/lib/rollplane/rollplane.db
USER 10001:10001
EXPOSE 4000
ENTRYPOINT ["node", "dist/src/main.js"]
