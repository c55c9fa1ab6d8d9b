package troupe

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"github.com/troupehq/troupe/internal/jsonvalue"
)

// Seed 000's models are pydantic models: a member whose name is not exactly a field's is an
// extra key, ignored. encoding/json matches names ignoring case, so {"Target_Agent": …} would
// set target_agent, over the member spelled right when it comes later. The wire decoders
// (DecodeDispatch, DecodeResult, and the nested records that have no decoder of their own)
// drop such members before decoding, as ErrorInfo's decoder matches exactly.

// fieldNames caches jsonNames by type.
var fieldNames sync.Map // reflect.Type → []string

// jsonNames are the JSON names of struct type t's exported fields (jsonvalue.Fields).
func jsonNames(t reflect.Type) []string {
	if v, ok := fieldNames.Load(t); ok {
		return v.([]string)
	}
	names, _ := jsonvalue.Fields(t)
	v, _ := fieldNames.LoadOrStore(t, names)
	return v.([]string)
}

// foldedName says whether k is none of names but equals one of them ignoring case, as
// encoding/json would match it.
func foldedName(k string, names []string) bool {
	folds := false
	for _, n := range names {
		if n == k {
			return false
		}
		folds = folds || strings.EqualFold(n, k)
	}
	return folds
}

// dropFolded deletes from raw, the members of a JSON object to be decoded into struct type t,
// those whose names equal a field's only ignoring case, and says whether it deleted any.
func dropFolded(raw map[string]json.RawMessage, t reflect.Type) bool {
	names := jsonNames(t)
	dropped := false
	for k := range raw {
		if foldedName(k, names) {
			delete(raw, k)
			dropped = true
		}
	}
	return dropped
}

// unmarshalExact decodes the JSON object b into v, a pointer to a struct without a decoder of
// its own, as json.Unmarshal does but matching member names exactly (see dropFolded).
func unmarshalExact(b []byte, v any) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || raw == nil {
		return json.Unmarshal(b, v) // encoding/json's error, or null, as it handles them
	}
	if dropFolded(raw, reflect.TypeOf(v).Elem()) {
		var err error
		if b, err = json.Marshal(raw); err != nil {
			return err
		}
	}
	return json.Unmarshal(b, v)
}
