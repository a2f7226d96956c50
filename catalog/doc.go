// Package catalog owns director's SQLite catalog (<home>/director.db): the
// schema and its versioned, embedded migrations, and the queries on the
// snapshots, profiles, runs, sessions and audit_events tables.
//
// The catalog is an index, not the truth: archives and their manifests live in
// the store (a catalog can be rebuilt from it with UpsertSnapshot), and the
// profile directories live on disk. A snapshot row is inserted only after its
// archive and manifest are stored, so a row never points at nothing.
//
// The database runs in WAL mode with a busy timeout and IMMEDIATE write
// transactions, so several director processes (a cron refresh, an agent
// session, a person at the terminal) can open and write one catalog at once.
// Times are stored as fixed-width UTC text with nanoseconds, which sorts as
// text and round-trips exactly.
package catalog
