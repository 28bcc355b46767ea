// Package refusedlogin remembers a backend's refusal of a client's
// credentials, so that the client answers its logins with that refusal for a
// while instead of sending them again: every login a backend refuses counts
// towards its account lockout (Keystone's lockout_failure_attempts), and a
// client that logs in again at every failed call locks the account within
// minutes. The StorageOS and OpenStack clients each keep one; plugin.ClientCache
// does the same for a client whose first login was refused.
package refusedlogin
