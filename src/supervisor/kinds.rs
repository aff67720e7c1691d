use super::OperatorBuilder;

/// Every kind the operator manages. Registering a kind is one line here, e.g.
/// `.register(Kind::new(PgAccessRequestReconciler::new()).child(...))`.
pub fn register_all(builder: OperatorBuilder) -> OperatorBuilder {
    builder
}
