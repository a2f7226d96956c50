// Package storage owns where snapshot archives live: one small streaming
// interface (Put, Get, Stat, List, Delete) and its backends, file:// (a local
// folder, the default), s3:// (AWS S3, MinIO, R2, versitygw, Supabase's S3
// endpoint) and supabase:// (Supabase Storage's REST API).
//
// Backends never buffer a whole object in memory, never overwrite an existing
// object, and return errors coded with errcode: a missing object is
// snapshot_not_found, a server that is down or failing is storage_unavailable.
// It imports nothing of the project but the leaf package errcode.
package storage
