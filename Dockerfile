# The operator image: the same `cargo build --release --locked` as CI, on a distroless (glibc)
# distroless runtime as the non-root user 65532 (deploy/04-deployment.yaml runs it as that uid).
FROM docker.io/library/rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin pgtoolbox-operator \
    && cp target/release/pgtoolbox-operator /pgtoolbox-operator

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /pgtoolbox-operator /usr/local/bin/pgtoolbox-operator
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/pgtoolbox-operator"]
CMD ["run"]
