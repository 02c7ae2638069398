package checkpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// compact removes the indentation MarshalIndent added to a raw message.
func compact(raw json.RawMessage) ([]byte, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, fmt.Errorf("manifest body: %w", err)
	}
	return b.Bytes(), nil
}
