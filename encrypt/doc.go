// Package encrypt owns director's encryption at rest with age
// (age-encryption.org/v1): parsing recipients (public keys, enough for a host
// that only snapshots) and identities (secret keys, needed to restore),
// generating an identity file, and streaming encryption and decryption of
// archives and manifests.
//
// Every failure to decrypt, a wrong or missing key as much as a damaged or
// truncated ciphertext found while reading, is an errcode.DecryptFailed error
// whose hint names DIRECTOR_AGE_IDENTITY / --age-identity. Errors of the
// underlying reader (a store going away) keep their own code. An identity
// file given as a command's argument to read its public keys from
// (LoadIdentityFile) decrypts nothing: its errors are invalid_input, and
// their hints speak of that file, not of the setting.
//
// Secrets never appear in errors: a secret key given where a public key is
// expected is refused without being echoed.
package encrypt
