# The Hangar images docker-compose.yml runs: the last stage (the default target) for the API, the
# control worker and the setup; the `node` stage for runtime nodes, which adds what the node
# worker runs sandboxes and builds with (the Debian packages scripts/install-deps.sh installs).

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The lock lacks other platforms' optional binaries (its mirror did not serve them), which npm ci
# refuses; npm install accepts the same lock.
RUN npm ci --no-audit --no-fund || npm install --no-audit --no-fund
COPY . .
# The web console (console/, Vite) compiles into dist/console, served by the API at /console.
RUN npm run -s compile && npm run -s build:console && npm prune --omit=dev

# A runtime node: bubblewrap (sandboxes), python3-seccomp (their seccomp filter), util-linux
# (setpriv, nsenter, script for terminals), nftables and iproute2 (sandbox networks), skopeo and
# umoci (registry images), buildah (Dockerfile builds), ripgrep (content search). It runs as root:
# it makes cgroups, namespaces and nftables rules (docker-compose.yml gives it the privileges).
FROM node:24-bookworm-slim AS node
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       bubblewrap python3 python3-seccomp util-linux nftables iproute2 skopeo umoci buildah ripgrep procps ca-certificates \
    && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    HANGAR_DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
VOLUME /data
CMD ["node", "dist/workers/node.js"]

FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    HANGAR_DATA_DIR=/data \
    HANGAR_HOST=0.0.0.0
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# A named volume mounted here starts out owned by node, so the unprivileged user can write keys
# and credentials.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8080 8081 8082
CMD ["node", "dist/api/server.js"]
