# The operator image: the same `cargo build --release --locked` as CI, on a distroless (glibc)
# distroless runtime as the non-root user 65532 (deploy/04-deployment.yaml runs it as that uid).
# The evidence agent's image is the stage `evidence-agent` of the same build:
#   docker build --target evidence-agent -t ghcr.io/pgtoolbox/evidence-agent:<VERSION> .
# (the image deploy/ names as --default-evidence-agent-image), the console's the stage `console`;
# without --target, the operator.
FROM docker.io/library/rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin pgtoolbox-operator --bin pgtoolbox-evidence-agent \
        --bin pgtoolbox-console \
    && cp target/release/pgtoolbox-operator /pgtoolbox-operator \
    && cp target/release/pgtoolbox-evidence-agent /pgtoolbox-evidence-agent \
    && cp target/release/pgtoolbox-console /pgtoolbox-console

# The evidence agent (docs/evidence-agent.md): the rendered Pod runs it as a non-root user with
# a read-only root filesystem; it writes nothing.
FROM gcr.io/distroless/cc-debian12:nonroot AS evidence-agent
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="evidence-agent" \
      org.opencontainers.image.description="Read-only HTTPS agent serving the barman-cloud backup evidence of one CloudNativePG cluster" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /pgtoolbox-evidence-agent /usr/local/bin/pgtoolbox-evidence-agent
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["/usr/local/bin/pgtoolbox-evidence-agent"]

# The console image (`docker build --target console`): ghcr.io/pgtoolbox/pgtoolbox-console:<VERSION>,
# the image the operator's --default-console-image names in deploy/04-deployment.yaml.
FROM gcr.io/distroless/cc-debian12:nonroot AS console
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="pgtoolbox-console" \
      org.opencontainers.image.description="The web console of PgToolBoxConsole: each signed-in user acts as themself" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /pgtoolbox-console /usr/local/bin/pgtoolbox-console
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/pgtoolbox-console"]

# The operator image, the default target (last stage).
FROM gcr.io/distroless/cc-debian12:nonroot AS operator
# A release is published as ghcr.io/pgtoolbox/pgtoolbox-operator:<VERSION>, the tag deploy/
# installs (its kustomization's `images:` entry). VERSION is the workspace version of Cargo.toml.
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="pgtoolbox-operator" \
      org.opencontainers.image.description="Kubernetes operator for the tools around CloudNativePG clusters" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /pgtoolbox-operator /usr/local/bin/pgtoolbox-operator
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/pgtoolbox-operator"]
CMD ["run"]
