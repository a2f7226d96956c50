-- 0003: the profiles table records a login that is only on disk.
--
-- unsaved_since is when `director profile open` last closed Chrome on the
-- profile without a snapshot after it: the local profile then holds a login
-- (made by hand) that no snapshot has. A snapshot or a restore of the
-- profile clears it. A run that would restore an older snapshot over such a
-- profile keeps the local one instead, so a fresh login is never replaced by
-- a stale one. NULL: nothing unsaved.

ALTER TABLE profiles ADD COLUMN unsaved_since TEXT;
