package secret

import (
	"path/filepath"
	"regexp"
	"strings"
)

// secretName is a variable or file name that says it holds a secret.
var secretName = regexp.MustCompile(`(?i)(pass(word|wd)?|secret|token|credential|private|api_?key|auth|_key$|^key$|cookie|session)`)

// connName is a variable name that says it holds a connection string.
var connName = regexp.MustCompile(`(?i)(dsn|_url|^url)$`)

// NamedSecret reports whether an environment variable's name says that it
// holds a secret (CONTESTED_PG_DSN, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY).
func NamedSecret(name string) bool { return secretName.MatchString(name) }

// ForDigest is what of a variable's value may enter a digest that other
// people read: a connection string (CONTESTED_PG_DSN, DATABASE_URL) with
// its password masked; nothing but that it is set, when its name says it
// is a secret; else the value with every password masked (Redact, and
// every known secret value, Scrub). A digest of a secret, whatever the
// rest it is folded with, can be tested against guesses by whoever reads
// it.
func ForDigest(name, value string) string {
	if NamedSecret(name) && !connName.MatchString(name) {
		return "set"
	}
	return ScrubString(Redact(value))
}

// secretFile is a file name that says it holds a secret.
var secretFile = regexp.MustCompile(`(?i)^(\.pgpass|\.netrc|\.npmrc|\.pypirc|\.git-credentials|\.env(\..*)?|id_[a-z0-9]+|.*\.(key|pem|p12|pfx|jks|keystore)|config\.json|.*(secret|token|credential|passw).*)$`)

// SecretFile reports whether a file's name says that it holds a secret
// (~/.pgpass, ~/.docker/config.json, a .pem): outside the module, such a
// file's content never enters a digest others read.
func SecretFile(path string) bool {
	return secretFile.MatchString(filepath.Base(path)) || strings.Contains(filepath.ToSlash(path), "/.ssh/")
}
