package bench

import _ "embed"

//go:embed manual-check.sh
var manualScript []byte
