// Package receipttest walks and edits decoded JSON documents (the map[string]any, []any
// and scalars a JSON decoder makes) by path, for the tests that mutate receipts: the
// verdicts' golden file (api), the quick schema pass against the library
// (receipt/schema) and the document reader against the decoder (receipt).
package receipttest

import (
	"slices"
	"strconv"
)

// Paths lists the path of every value of node (node's own, the empty path, first), object
// members in name order, array items by index.
func Paths(node any) [][]string {
	var out [][]string
	paths(node, nil, &out)
	return out
}

func paths(node any, prefix []string, out *[][]string) {
	*out = append(*out, slices.Clone(prefix))
	switch n := node.(type) {
	case map[string]any:
		names := make([]string, 0, len(n))
		for name := range n {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			paths(n[name], append(prefix, name), out)
		}
	case []any:
		for i, v := range n {
			paths(v, append(prefix, strconv.Itoa(i)), out)
		}
	}
}

// Get is the value at path (nil when there is none).
func Get(node any, path []string) any {
	for _, p := range path {
		switch n := node.(type) {
		case map[string]any:
			node = n[p]
		case []any:
			i, _ := strconv.Atoi(p)
			node = n[i]
		}
	}
	return node
}

// Put sets (or, with remove, deletes) the value at path and returns the root.
func Put(node any, path []string, v any, remove bool) any {
	if len(path) == 0 {
		return v
	}
	switch n := node.(type) {
	case map[string]any:
		if len(path) == 1 && remove {
			delete(n, path[0])
			return n
		}
		n[path[0]] = Put(n[path[0]], path[1:], v, remove)
		return n
	case []any:
		i, _ := strconv.Atoi(path[0])
		if len(path) == 1 && remove {
			return slices.Delete(n, i, i+1)
		}
		n[i] = Put(n[i], path[1:], v, remove)
		return n
	}
	return node
}
