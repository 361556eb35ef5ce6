//! phyz-dual: forward-mode derivatives of phyz steps with num-dual.
