package bench

import (
	_ "embed"
	"encoding/json"
)

//go:embed manual-check.sh
var manualScript []byte

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
