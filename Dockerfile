# vop's image: one image for every role (all, api, worker), chosen at run time with VOP_ROLE.
#
#   docker build -t vop .
#   docker run --env-file vop.env -p 8080:8080 -v vop-data:/data vop    # one machine, embedded
#   # vop.env: VOP_ADMIN_TOKEN=… (never on the command line), and VOP_ADMIN_REMOTE=1 to use the
#   # console from outside the container (its requests do not come from loopback)
#
# docker-compose.yml runs it as two API nodes and two workers behind nginx (README: "Running on
# several machines").
FROM node:20-bookworm-slim

# Debian's ffmpeg serves every role: workers transcode with ffmpeg, and API nodes still run
# ffprobe on each upload as it arrives (a file that is not a video never reaches the bucket).
# tini is PID 1: it passes SIGTERM on to npm (which passes it to the server, see
# scripts/start.mjs) and reaps whatever a child leaves behind.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg tini \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/vop

# Dependencies first, so that a change to the sources does not reinstall them. .npmrc keeps
# ignore-scripts on: the install scripts of electron and ffmpeg-static download from GitHub, and
# nothing the server runs needs them. Dev dependencies stay: `npm start` runs
# scripts/build-server.mjs, which imports esbuild even when the bundle is up to date.
COPY package.json package-lock.json .npmrc ./
# `npm install`, not `npm ci`: the lock was made where the registry lacks some platforms' optional
# builds (msgpackr-extract's for macOS and Windows), so `npm ci` finds it incomplete and stops;
# `npm install` follows the lock for everything it lists and resolves the rest.
RUN npm install --no-audit --no-fund && npm cache clean --force

# Build what `npm start` serves and runs: the console (renderer/dist) and the server bundle
# (dist/server). Built here, as root, so that at start both are up to date and nothing is written;
# were one stale, the user below could not rewrite it (build-server.mjs then runs the bundle there).
COPY . .
RUN npm run build:console && npm run build:server

# Not root at run time. /data is the node's data directory: with a database and object storage it
# holds only scratch (uploads being received, transcodes' working folders). vop wants it 0700.
RUN useradd --system --create-home --home-dir /home/vop --shell /usr/sbin/nologin vop \
 && mkdir -p /data && chown vop:vop /data && chmod 700 /data
USER vop

ENV NODE_ENV=production \
    VOP_DATA_DIR=/data \
    VOP_PORT=8080 \
    VOP_FFMPEG_PATH=/usr/bin/ffmpeg \
    VOP_FFPROBE_PATH=/usr/bin/ffprobe \
    NPM_CONFIG_UPDATE_NOTIFIER=false
VOLUME ["/data"]
EXPOSE 8080

# /healthz answers 200 once the node is ready (a worker too: it answers nothing else). The wait
# for the database (about two minutes at most) and the bucket (about one) comes before it listens.
HEALTHCHECK --interval=30s --timeout=5s --start-period=180s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.VOP_PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["npm", "start"]
