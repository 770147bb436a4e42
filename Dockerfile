# The Hangar API and control-worker image (docker-compose.yml runs both from it).
# Sandbox runtime nodes need bubblewrap, cgroups, nftables and iproute2 (scripts/install-deps.sh)
# on a real Linux host; they are not run here.

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The lock lacks other platforms' optional binaries (its mirror did not serve them), which npm ci
# refuses; npm install accepts the same lock.
RUN npm ci --no-audit --no-fund || npm install --no-audit --no-fund
COPY . .
# The web console (console/, Vite) compiles into dist/console, served by the API at /console.
RUN npm run -s compile && npm run -s build:console && npm prune --omit=dev

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
