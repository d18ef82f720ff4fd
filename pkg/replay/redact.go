package replay

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
)

// Redacted replaces a value the recording must never hold.
const Redacted = "REDACTED"

// sensitiveEnv matches environment variable names whose literal values are credentials.
var sensitiveEnv = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^|_)(TOKEN|PASSWORD|PASSWD|SECRET|APIKEY|KEY|CREDENTIALS?|AUTH)($|_)`)
})

// redactJSON removes from an API body what a bundle never holds: a Secret's data and
// stringData values (their keys are kept), the literal values of environment variables named
// like credentials, the last-applied-configuration annotation (a copy of the object as applied,
// Secrets' data included when they were applied), and managedFields (the field managers'
// bookkeeping, which no check reads and which doubles a recording's size). A body that is not
// JSON is kept as it is unless its path is a Secret's, then it is dropped.
func redactJSON(path string, body []byte) []byte {
	secretPath := strings.Contains(path, "/secrets")
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if secretPath {
			return []byte(Redacted)
		}
		return body
	}
	v = redactValue(v, secretPath)
	out, err := json.Marshal(v)
	if err != nil {
		return []byte(Redacted)
	}
	return out
}

func redactValue(v any, secret bool) any {
	switch t := v.(type) {
	case map[string]any:
		kind, _ := t["kind"].(string)
		isSecret := secret || kind == "Secret" || kind == "SecretList"
		if isSecret {
			blankData(t)
		}
		if meta, ok := t["metadata"].(map[string]any); ok {
			redactMeta(meta)
		}
		if env, ok := t["env"].([]any); ok {
			redactEnv(env)
		}
		for k, child := range t {
			// A SecretList's items carry no kind of their own.
			t[k] = redactValue(child, isSecret && k == "items" || secret)
		}
		return t
	case []any:
		for i, child := range t {
			t[i] = redactValue(child, secret)
		}
		return t
	}
	return v
}

// blankData empties a Secret's values, keeping its keys.
func blankData(secret map[string]any) {
	for _, field := range []string{"data", "stringData"} {
		if m, ok := secret[field].(map[string]any); ok {
			for k := range m {
				m[k] = ""
			}
		}
	}
}

func redactMeta(meta map[string]any) {
	delete(meta, "managedFields")
	if ann, ok := meta["annotations"].(map[string]any); ok {
		if _, had := ann["kubectl.kubernetes.io/last-applied-configuration"]; had {
			ann["kubectl.kubernetes.io/last-applied-configuration"] = Redacted
		}
	}
}

func redactEnv(env []any) {
	for _, e := range env {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		if name, _ := m["name"].(string); sensitiveEnv().MatchString(name) {
			if _, has := m["value"]; has {
				m["value"] = Redacted
			}
		}
	}
}
