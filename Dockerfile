# The accountable image: one static binary, subcommand chosen by CMD.
#
#   docker build -t accountable .
#   docker run --rm -e DATABASE_URL=... -e TEMPORAL_ADDRESS=... -p 127.0.0.1:8080:8080 accountable serve
#   docker run --rm ... accountable worker | migrate | keys create ... | ledger verify
#
# docker-compose.yml beside this file runs the whole stack.

# ---- build -------------------------------------------------------------------------------
FROM golang:1.26-bookworm AS build
WORKDIR /src
# Static binary for the distroless image. GOTOOLCHAIN=auto (the image says local) fetches the
# patch release go.mod names only if the image's Go 1.26 is older than it.
ENV CGO_ENABLED=0 GOFLAGS=-mod=readonly GOTOOLCHAIN=auto

# Modules first, as their own layer: it is rebuilt only when go.mod or go.sum changes.
COPY go.mod go.sum ./
RUN go mod download

COPY . .
RUN go build -trimpath -ldflags="-s -w" -o /out/accountable ./cmd/accountable

# ---- runtime -----------------------------------------------------------------------------
# distroless/static: CA certificates and tzdata, no shell, runs as uid 65532 (nonroot).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/accountable /accountable

# The binary defaults to 127.0.0.1:8080, which is unreachable from outside a container.
ENV HTTP_ADDR=0.0.0.0:8080
EXPOSE 8080
USER nonroot:nonroot
WORKDIR /home/nonroot

# No HEALTHCHECK: the image has no shell or HTTP client to run one. Probe GET /healthz
# (process up) or GET /readyz (PostgreSQL and Temporal reachable) from the orchestrator.
ENTRYPOINT ["/accountable"]
CMD ["serve"]
