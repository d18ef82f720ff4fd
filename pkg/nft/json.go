package nft

import (
	"encoding/json"
	"fmt"
	"net/netip"
)

// The JSON form is libnftables-json(5): {"nftables": [{"table": ...}, {"chain": ...},
// {"set": ...}, {"rule": {..., "expr": [statements]}}]}.

type jsonChain struct {
	Family string `json:"family"`
	Table  string `json:"table"`
	Name   string `json:"name"`
	Type   string `json:"type"`
	Hook   string `json:"hook"`
}

type jsonSet struct {
	Family string            `json:"family"`
	Table  string            `json:"table"`
	Name   string            `json:"name"`
	Elem   []json.RawMessage `json:"elem"`
}

type jsonRule struct {
	Family string                       `json:"family"`
	Table  string                       `json:"table"`
	Chain  string                       `json:"chain"`
	Expr   []map[string]json.RawMessage `json:"expr"`
}

type jsonMatch struct {
	Op    string          `json:"op"`
	Left  json.RawMessage `json:"left"`
	Right json.RawMessage `json:"right"`
}

// ParseJSON reads `nft -j list ruleset`.
func ParseJSON(out []byte) (Ruleset, error) {
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return Ruleset{}, fmt.Errorf("not nft's JSON: %w", err)
	}
	rs := Ruleset{Sets: map[string][]netip.Prefix{}}
	for _, obj := range doc.Nftables {
		switch {
		case obj["chain"] != nil:
			var c jsonChain
			if err := json.Unmarshal(obj["chain"], &c); err != nil {
				return rs, fmt.Errorf("chain: %w", err)
			}
			rs.Chains = append(rs.Chains, Chain(c))
		case obj["set"] != nil:
			var s jsonSet
			if err := json.Unmarshal(obj["set"], &s); err != nil {
				return rs, fmt.Errorf("set: %w", err)
			}
			var elems []netip.Prefix
			for _, e := range s.Elem {
				if p, ok := jsonPrefixes(e); ok {
					elems = append(elems, p...)
				}
			}
			rs.Sets[s.Family+" "+s.Table+" "+s.Name] = elems
		case obj["rule"] != nil:
			var r jsonRule
			if err := json.Unmarshal(obj["rule"], &r); err != nil {
				return rs, fmt.Errorf("rule: %w", err)
			}
			rs.Rules = append(rs.Rules, r.rule())
		}
	}
	return rs, nil
}

func (jr jsonRule) rule() Rule {
	r := Rule{Family: jr.Family, Table: jr.Table, Chain: jr.Chain}
	for _, stmt := range jr.Expr {
		for kind, body := range stmt {
			r.statement(kind, body)
		}
	}
	r.Raw = r.render()
	return r
}

// statement reads one statement of a rule's expression list.
func (r *Rule) statement(kind string, body json.RawMessage) {
	switch kind {
	case "match":
		var m jsonMatch
		if json.Unmarshal(body, &m) != nil || !r.match(m) {
			r.Conditional = true
		}
	case "masquerade", "accept", "return", "drop":
		r.Verdict = kind
	case "snat":
		var s struct {
			Addr any `json:"addr"`
		}
		_ = json.Unmarshal(body, &s)
		r.Verdict, r.Target = "snat", fmt.Sprint(s.Addr)
	case "jump", "goto":
		var j struct {
			Target string `json:"target"`
		}
		_ = json.Unmarshal(body, &j)
		r.Verdict, r.Target = kind, j.Target
	case "xt": // what iptables-nft writes: its targets by name
		var x struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		_ = json.Unmarshal(body, &x)
		switch {
		case x.Type == "target" && x.Name == "MASQUERADE":
			r.Verdict = "masquerade"
		case x.Type == "target" && x.Name == "SNAT":
			r.Verdict, r.Conditional = "snat", true // its address is not in the JSON
		default:
			r.Conditional = true
		}
	case "counter", "log", "comment", "limit", "notrack":
	default:
		r.Conditional = true
	}
}

// match reads an address or out-interface match; false for any other match.
func (r *Rule) match(m jsonMatch) bool {
	neg := m.Op == "!="
	if m.Op != "==" && m.Op != "!=" && m.Op != "in" {
		return false
	}
	var left struct {
		Payload *struct {
			Protocol string `json:"protocol"`
			Field    string `json:"field"`
		} `json:"payload"`
		Meta *struct {
			Key string `json:"key"`
		} `json:"meta"`
	}
	if json.Unmarshal(m.Left, &left) != nil {
		return false
	}
	switch {
	case left.Payload != nil && left.Payload.Protocol == "ip" && (left.Payload.Field == "saddr" || left.Payload.Field == "daddr"):
		var name string
		if json.Unmarshal(m.Right, &name) == nil && len(name) > 1 && name[0] == '@' {
			if left.Payload.Field == "daddr" {
				return false
			}
			r.SourceSet, r.SourceNegated = name[1:], neg
			return true
		}
		ps, ok := jsonPrefixes(m.Right)
		if !ok {
			return false
		}
		if left.Payload.Field == "saddr" {
			r.Source, r.SourceNegated = ps, neg
		} else {
			r.Dest, r.DestNegated = ps, neg
		}
		return true
	case left.Meta != nil && left.Meta.Key == "oifname":
		var name string
		if json.Unmarshal(m.Right, &name) != nil {
			return false
		}
		r.OutIface, r.OutIfaceNegated = name, neg
		return true
	}
	return false
}

// jsonPrefixes reads an address, {"prefix": {...}}, or {"set": [...]} of those.
func jsonPrefixes(raw json.RawMessage) ([]netip.Prefix, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		p, ok := parseAddr(s)
		return []netip.Prefix{p}, ok
	}
	var obj struct {
		Prefix *struct {
			Addr string `json:"addr"`
			Len  int    `json:"len"`
		} `json:"prefix"`
		Set []json.RawMessage `json:"set"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		return nil, false
	}
	switch {
	case obj.Prefix != nil:
		p, ok := parseAddr(fmt.Sprintf("%s/%d", obj.Prefix.Addr, obj.Prefix.Len))
		return []netip.Prefix{p}, ok
	case obj.Set != nil:
		var out []netip.Prefix
		for _, e := range obj.Set {
			ps, ok := jsonPrefixes(e)
			if !ok {
				return nil, false
			}
			out = append(out, ps...)
		}
		return out, true
	}
	return nil, false
}
