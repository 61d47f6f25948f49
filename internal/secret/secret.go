// Package secret keeps passwords out of everything contested prints or
// saves. It does two things, both needed:
//
//   - Redact masks the password of every connection-string form pgx accepts
//     wherever one appears in free text: a URL's user info
//     (postgres://u:PASS@h/db), a query parameter (?password=PASS,
//     &sslpassword=PASS), a keyword/value pair (password=PASS,
//     password='a b', PGPASSWORD=PASS) and a JSON member ("password": "PASS").
//   - Scrub also replaces every known secret value wherever it appears, in
//     any form, including inside error messages that echo a connection
//     string in a shape no pattern recognizes. Known values are the ones
//     registered with Add and AddDSN (the test plane's generated password,
//     a victim's, a replica's) and the ones the environment carries
//     (CONTESTED_PG_DSN, CONTESTED_HISTORY_DSN, PGPASSWORD), read at every
//     call so that a child process scrubs with what it was given.
//
// Scrubbing is applied at chokepoints, not call sites: the artifact
// writers, the battery's event stream and the Mage targets' output writer
// (see Writer). JSON input stays valid JSON: masking happens inside string
// literals, which are re-encoded only when they change.
//
// A known value shorter than MinKnownLength, or one of the published
// defaults (the devstack's "contested", "postgres"), is masked only where it
// appears in a connection-string form: replacing such a word everywhere
// would mangle paths, module names and test names, and it is no secret.
package secret

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/contested/contested/internal/envvar"
)

// Mask replaces every password. It is pgx's own mask, so messages pgx
// redacted and messages this package redacted look alike.
const Mask = "xxxxx"

// MinKnownLength is the shortest known value that is masked wherever it
// appears; shorter ones are masked only in connection-string forms.
const MinKnownLength = 6

// EnvDSNs are the variables whose connection strings carry a password that
// every process of a run must keep out of its output.
var EnvDSNs = []string{envvar.PostgresDSN, envvar.HistoryDSN}

// EnvPassword is libpq's (and pgx's) password variable.
const EnvPassword = "PGPASSWORD"

// published are passwords printed in this repository's own files (the
// compose devstack) and Postgres defaults: not secrets, and words the
// output uses for other things.
var published = map[string]bool{"contested": true, "postgres": true, "password": true, Mask: true}

var (
	// urlUserinfo: scheme://user:PASSWORD@ — the password runs to the last
	// '@' before the host, as net/url (and so pgx) reads it.
	urlUserinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*://[^\s:/@?#]*:)[^\s/?#]*@`)
	// keyValue: password=, sslpassword=, PGPASSWORD= and Password: (Go's
	// %+v) with the character before the key, which says whether this is
	// a URL query (value ends at '&') or a keyword/value string (value
	// ends at white space, or is quoted).
	keyValue = regexp.MustCompile(`(?i)(^|[^a-z0-9_])((?:pg)?(?:ssl)?password)(\s*=\s*|:)('(?:[^'\\]|\\.)*'?|"(?:[^"\\]|\\.)*"?|(?:[^\s\\]|\\.)*)`)
	// jsonMember: "password": "…" in JSON that reached free text.
	jsonMember = regexp.MustCompile(`(?i)("(?:pg)?(?:ssl)?password"\s*:\s*)"(?:[^"\\]|\\.)*"`)
)

// Redact masks the password of every connection-string form in s. It knows
// no values: it recognizes shapes. Use Scrub to also mask known values.
func Redact(s string) string {
	if !mayHoldDSN(s) {
		return s
	}
	s = urlUserinfo.ReplaceAllString(s, "${1}"+Mask+"@")
	s = jsonMember.ReplaceAllString(s, `${1}"`+Mask+`"`)
	return replaceKeyValues(s)
}

// mayHoldDSN is a cheap test that lets most text skip the expressions.
func mayHoldDSN(s string) bool {
	return strings.Contains(s, "://") || containsFold(s, "password")
}

func containsFold(s, sub string) bool {
	n := len(sub)
	for i := 0; i+n <= len(s); i++ {
		if strings.EqualFold(s[i:i+n], sub) {
			return true
		}
	}
	return false
}

func replaceKeyValues(s string) string {
	idx := keyValue.FindAllStringSubmatchIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range idx {
		pre, sep, val := s[m[2]:m[3]], s[m[6]:m[7]], s[m[8]:m[9]]
		if sep == ":" && (val == "" || val[0] == ' ') {
			continue // "password: check …" is prose, not a value
		}
		if val == "" {
			continue
		}
		b.WriteString(s[last:m[8]])
		switch {
		case val[0] == '\'' || val[0] == '"':
			b.WriteByte(val[0])
			b.WriteString(Mask)
			b.WriteByte(val[0])
		case pre == "?" || pre == "&":
			// A URL query value ends at the next parameter.
			end := strings.IndexAny(val, "&#")
			b.WriteString(Mask)
			if end >= 0 {
				b.WriteString(val[end:])
			}
		default:
			// Punctuation that closes the text around the pair (a quote, a
			// bracket, a comma) is kept so the message still reads.
			trimmed := strings.TrimRight(val, "\"'`,;)]}")
			b.WriteString(Mask)
			b.WriteString(val[len(trimmed):])
		}
		last = m[9]
	}
	b.WriteString(s[last:])
	return b.String()
}

// registry holds the values registered with Add, and a cache of what the
// environment carries.
var registry = struct {
	sync.Mutex
	added   []string
	envKey  string
	fromEnv []string
	// vs caches the variants of added and fromEnv; nil when either changed.
	vs *known
}{}

// Add registers secret values (a generated password) to be masked by
// every Scrub in this process. Empty values are ignored.
func Add(values ...string) {
	registry.Lock()
	defer registry.Unlock()
	for _, v := range values {
		if v != "" && !slices.Contains(registry.added, v) {
			registry.added = append(registry.added, v)
			registry.vs = nil
		}
	}
}

// AddDSN registers the passwords of a connection string, in any form.
func AddDSN(dsn string) { Add(Passwords(dsn)...) }

// Passwords returns the secrets a connection string carries: a URL's
// user-info password and password/sslpassword query values, or the
// password/sslpassword values of a keyword/value string (quoted or not).
// When unsure it takes more: the value of every key it does not know to be
// harmless (a misspelt "pasword=", a key pgx hands the server as a
// parameter), and the whole string when it is neither a URL nor a
// keyword/value string it can read (a DSN that does not parse, whose
// secret could be anywhere in it).
func Passwords(dsn string) []string {
	dsn = strings.TrimSpace(dsn)
	if dsn == "" {
		return nil
	}
	var out []string
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			if p, ok := u.User.Password(); ok {
				out = append(out, p)
			}
			for k, vs := range u.Query() {
				if isPasswordKey(k) || !harmlessKeys[strings.ToLower(k)] {
					out = append(out, vs...)
				}
			}
			return nonEmpty(out)
		}
	}
	if pairs, ok := keywordValues(dsn); ok {
		for _, kv := range pairs {
			if isPasswordKey(kv[0]) || !harmlessKeys[strings.ToLower(kv[0])] {
				out = append(out, kv[1])
			}
		}
		return nonEmpty(out)
	}
	// Neither form: the secret may be anywhere in it.
	out = append(out, dsn)
	for _, m := range keyValue.FindAllStringSubmatch(dsn, -1) {
		if m[3] == ":" || !isPasswordKey(m[2]) {
			continue
		}
		out = append(out, unquoteKeyword(m[4]))
	}
	// A URL that did not parse: take what sits between ':' and '@'.
	for _, m := range urlUserinfo.FindAllStringSubmatchIndex(dsn, -1) {
		out = append(out, dsn[m[3]:m[1]-1])
	}
	return nonEmpty(out)
}

func isPasswordKey(k string) bool { return strings.HasSuffix(strings.ToLower(k), "password") }

// harmlessKeys are the connection-string keys whose values are no secret
// (where to connect, as whom, how): every other key's value is taken as
// one.
var harmlessKeys = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "database": true, "user": true,
	"sslmode": true, "sslrootcert": true, "sslcert": true, "sslkey": true, "sslsni": true, "sslnegotiation": true,
	"sslcertmode": true, "channel_binding": true, "gssencmode": true, "krbsrvname": true, "require_auth": true,
	"application_name": true, "fallback_application_name": true, "connect_timeout": true,
	"target_session_attrs": true, "load_balance_hosts": true, "min_protocol_version": true, "max_protocol_version": true,
	"search_path": true, "timezone": true, "client_encoding": true, "options": true, "replication": true,
	"service": true, "servicefile": true, "passfile": true,
	"statement_cache_capacity": true, "description_cache_capacity": true, "default_query_exec_mode": true,
	"pool_max_conns": true, "pool_min_conns": true, "pool_min_idle_conns": true, "pool_max_conn_lifetime": true,
	"pool_max_conn_lifetime_jitter": true, "pool_max_conn_idle_time": true, "pool_health_check_period": true,
}

// keywordValues splits a libpq keyword/value string into its pairs, or
// reports that s is not one: every token must be key=value, the value
// bare (backslash escapes) or single-quoted.
func keywordValues(s string) ([][2]string, bool) {
	var out [][2]string
	i := 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
		if i == len(s) {
			return out, len(out) > 0
		}
		start := i
		for i < len(s) && (s[i] == '_' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9') {
			i++
		}
		key := s[start:i]
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if key == "" || i == len(s) || s[i] != '=' {
			return nil, false
		}
		i++
		for i < len(s) && s[i] == ' ' {
			i++
		}
		var v strings.Builder
		if i < len(s) && s[i] == '\'' {
			i++
			closed := false
			for i < len(s) {
				if s[i] == '\\' && i+1 < len(s) {
					v.WriteByte(s[i+1])
					i += 2
					continue
				}
				if s[i] == '\'' {
					closed = true
					i++
					break
				}
				v.WriteByte(s[i])
				i++
			}
			if !closed {
				return nil, false
			}
		} else {
			for i < len(s) && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				v.WriteByte(s[i])
				i++
			}
		}
		out = append(out, [2]string{key, v.String()})
	}
}

// ParseError is what to say of a connection string that did not parse,
// without any of the string: pgx's own message echoes it, masking the
// passwords it recognizes, and a string that does not parse is exactly
// where it may not recognize one.
func ParseError(err error) string {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return ScrubString(err.Error())
	}
	bare := *pe
	bare.ConnString = ""
	text := strings.TrimPrefix(bare.Error(), "cannot parse ``: ")
	if inner := errors.Unwrap(pe); inner != nil {
		// The inner error (net/url's, strconv's) quotes the part it
		// could not read, which may be the secret.
		text = strings.TrimSuffix(text, " ("+inner.Error()+")")
	}
	return ScrubString(text)
}

func nonEmpty(vs []string) []string {
	out := vs[:0]
	for _, v := range vs {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// unquoteKeyword reads a libpq keyword value: 'quoted' with \' and \\
// escapes, or bare with backslash escapes.
func unquoteKeyword(v string) string {
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		v = v[1 : len(v)-1]
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// Known returns the values Scrub masks: the registered ones and the
// passwords the environment carries now.
func Known() []string {
	registry.Lock()
	defer registry.Unlock()
	refreshEnv()
	return append(append([]string(nil), registry.added...), registry.fromEnv...)
}

// knownVariants is variants(Known()), computed again only when a value
// was added or the environment changed.
func knownVariants() *known {
	registry.Lock()
	defer registry.Unlock()
	refreshEnv()
	if registry.vs == nil {
		registry.vs = newKnown(variants(append(append([]string(nil), registry.added...), registry.fromEnv...)))
	}
	return registry.vs
}

// refreshEnv rereads the passwords of the environment when it changed;
// registry must be locked.
func refreshEnv() {
	key := os.Getenv(EnvPassword)
	for _, e := range EnvDSNs {
		key += "\x00" + os.Getenv(e)
	}
	if key != registry.envKey || registry.fromEnv == nil {
		env := []string{}
		if p := os.Getenv(EnvPassword); p != "" {
			env = append(env, p)
		}
		for _, e := range EnvDSNs {
			env = append(env, Passwords(os.Getenv(e))...)
		}
		registry.envKey, registry.fromEnv, registry.vs = key, env, nil
	}
}

// variants returns the strings to mask for the known values: each value as
// it is, URL-escaped, JSON-escaped and Go-quoted, longest first, without
// the short and published ones.
func variants(known []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range known {
		if len(v) < MinKnownLength || published[strings.ToLower(v)] {
			continue
		}
		js, _ := json.Marshal(v)
		for _, f := range []string{v, url.QueryEscape(v), url.PathEscape(v), url.UserPassword("u", v).String()[2:],
			string(js[1 : len(js)-1]), strconv.Quote(v)[1 : len(strconv.Quote(v))-1]} {
			if f != "" && !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// known is the variants to mask, indexed by their first MinKnownLength
// bytes (no variant is shorter), so that finding which of them a text holds
// takes one pass over the text however many there are: a process that
// made a thousand victims has six thousand.
type known struct {
	vs       []string            // longest first
	byPrefix map[string][]string // longest first within each
}

// scanFrom is how many variants make the index pay for itself over asking
// each variant whether the text holds it.
const scanFrom = 32

func newKnown(vs []string) *known {
	k := &known{vs: vs}
	if len(vs) >= scanFrom {
		k.byPrefix = map[string][]string{}
		for _, v := range vs {
			k.byPrefix[v[:MinKnownLength]] = append(k.byPrefix[v[:MinKnownLength]], v)
		}
	}
	return k
}

// in returns the variants s holds, longest first.
func (k *known) in(s string) []string {
	if k.byPrefix == nil {
		var found []string
		for _, v := range k.vs {
			if strings.Contains(s, v) {
				found = append(found, v)
			}
		}
		return found
	}
	var found []string
	for i := 0; i+MinKnownLength <= len(s); i++ {
		for _, v := range k.byPrefix[s[i:i+MinKnownLength]] {
			if strings.HasPrefix(s[i:], v) && !slices.Contains(found, v) {
				found = append(found, v)
			}
		}
	}
	slices.SortStableFunc(found, func(a, b string) int { return len(b) - len(a) })
	return found
}

// holds reports whether b holds any of the variants.
func (k *known) holds(b []byte) bool {
	if k.byPrefix == nil {
		for _, v := range k.vs {
			if bytes.Contains(b, []byte(v)) {
				return true
			}
		}
		return false
	}
	for i := 0; i+MinKnownLength <= len(b); i++ {
		for _, v := range k.byPrefix[string(b[i:i+MinKnownLength])] {
			if bytes.HasPrefix(b[i:], []byte(v)) {
				return true
			}
		}
	}
	return false
}

// ScrubString masks the known values and every connection-string password
// in s.
func ScrubString(s string) string {
	return scrubText(s, knownVariants())
}

// scrubText masks in s the variants it holds, longest first (a shorter one
// inside a longer one is masked with it), then the patterns.
func scrubText(s string, k *known) string {
	for _, v := range k.in(s) {
		s = strings.ReplaceAll(s, v, Mask)
	}
	return Redact(s)
}

// Scrub masks the known values and every connection-string password in
// b. When b is a JSON document the masking happens inside its string
// literals, so the result is still valid JSON with the same structure.
func Scrub(b []byte) []byte {
	return scrub(b, knownVariants())
}

func scrub(b []byte, k *known) []byte {
	if !mayHold(b, k) {
		return b
	}
	if json.Valid(b) {
		return scrubJSON(b, k)
	}
	s := scrubText(string(b), k)
	if s == string(b) {
		return b
	}
	return []byte(s)
}

// mayHold reports whether b could contain anything to mask.
func mayHold(b []byte, k *known) bool {
	return bytes.Contains(b, []byte("://")) || containsFold(string(b), "password") || k.holds(b)
}

// scrubJSON masks inside each string literal of a valid JSON document and
// re-encodes only the literals that changed.
func scrubJSON(b []byte, vs *known) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		j := i + 1
		for j < len(b) && b[j] != '"' {
			if b[j] == '\\' {
				j++
			}
			j++
		}
		lit := b[i : j+1]
		var s string
		if err := json.Unmarshal(lit, &s); err == nil {
			if t := scrubText(s, vs); t != s {
				enc, _ := json.Marshal(t)
				out = append(out, b[last:i]...)
				out = append(out, enc...)
				last = j + 1
			}
		}
		i = j
	}
	if out != nil {
		b = append(out, b[last:]...)
	}
	// A member named password carries a secret whatever its value.
	return jsonMember.ReplaceAll(b, []byte(`${1}"`+Mask+`"`))
}
