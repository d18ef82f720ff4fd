package replay

import (
	"encoding/json"
	"fmt"
)

// Call is one question to a seam the bundle knows by its methods only: vpn-trace
// --from-client's prober (this machine's addresses, routes, sockets and resolver). Method names
// the question ("prober.Connect"); Args and Result are its arguments and its answer as JSON,
// Error how it failed. The seam's owner (checks/vpn/facts) says what each method's arguments
// and answer hold; this package only keeps and matches them.
type Call struct {
	Method string          `json:"method"`
	Args   json.RawMessage `json:"args,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Failure        `json:"error,omitempty"`
}

// maxCallBytes bounds one call's arguments or answer (a routing table is the largest).
const maxCallBytes = 1 << 20

// Call records one call of a seam: its method, arguments and answer (result and err). An
// answer that does not marshal, or exceeds the bounds, is noted as incomplete: its replay is
// an error.
func (r *Recorder) Call(method string, args, result any, err error) {
	ex := Call{Method: method, Error: failureOf(err)}
	what := "call " + method
	var merr error
	if ex.Args, merr = marshalCall(args); merr == nil {
		ex.Result, merr = marshalCall(result)
	}
	if merr != nil {
		r.note(fmt.Sprintf("%s: %v", what, merr))
		return
	}
	keepOne(r, &r.b.Calls, ex, len(ex.Args)+len(ex.Result)+len(method), what+" "+string(ex.Args))
}

func marshalCall(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(raw) > maxCallBytes {
		return nil, fmt.Errorf("%d bytes, more than %d", len(raw), maxCallBytes)
	}
	if string(raw) == "null" {
		return nil, nil
	}
	return raw, nil
}

// callKey is a call's method and its arguments as canonical JSON (objects' keys sorted: an
// anonymized bundle's arguments were decoded and encoded again).
func callKey(method string, args json.RawMessage) string {
	key := "call " + method
	if len(args) > 0 {
		var v any
		if json.Unmarshal(args, &v) == nil {
			if canon, err := json.Marshal(v); err == nil {
				args = canon
			}
		}
		key += " " + string(compactJSON(args))
	}
	return normalize(key)
}

// Call answers one call of a seam from the bundle: result (a pointer) gets the recorded answer
// and the recorded error is returned. A call the bundle does not hold is a
// *NotRecordedError naming it.
func (p *Player) Call(method string, args, result any) error {
	rawArgs, err := marshalCall(args)
	if err != nil {
		return err
	}
	i, err := p.take(callKey(method, rawArgs))
	if err != nil {
		return err
	}
	x := p.bundle.Calls[i]
	if len(x.Result) > 0 && result != nil {
		if err := json.Unmarshal(x.Result, result); err != nil {
			return fmt.Errorf("replay bundle: the answer to %s: %w", method, err)
		}
	}
	return x.Error.Err()
}
