// Package nft reads nftables rulesets as `nft -j list ruleset` (libnftables' JSON) and
// `nft list ruleset` print them, for the source NAT they apply to an address range.
package nft
