//! A throwaway PostgreSQL cluster for tests.
