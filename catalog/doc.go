// Package catalog owns director's SQLite catalog (<home>/director.db): the
// schema and its versioned, embedded migrations, and the queries on the
// snapshots, profiles, runs, sessions and audit_events tables.
//
// The catalog is an index, not the truth: archives and their manifests live in
// the store (a catalog can be rebuilt from it with UpsertSnapshot), and the
// profile directories live on disk. A snapshot row is inserted only after its
// archive and manifest are stored, so a row never points at nothing.
//
// One catalog can index several stores: every snapshot row records the store
// URL its archive lives in, without credentials (StoreName), and every
// snapshot query takes the store it works on, so listing, "latest", prune,
// delete, verify, restore and rebuild never see or touch another store's
// rows. Rows written before that column existed (migration 0002 gives them
// an empty store) are listed by LegacySnapshots and adopted, one by one,
// by the store that holds their archives (AdoptSnapshots; the profiles
// package looks the archives up before its first snapshot query).
//
// The database runs in WAL mode with a busy timeout and IMMEDIATE write
// transactions, so several director processes (a cron refresh, an agent
// session, a person at the terminal) can open and write one catalog at once.
// Times are stored as fixed-width UTC text with nanoseconds, which sorts as
// text and round-trips exactly.
package catalog
