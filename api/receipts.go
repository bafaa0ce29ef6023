package api

// ReceiptStore is what the Receipt import area needs.
type ReceiptStore interface{}

// receiptOperations are the Receipt validation and Receipt import areas.
func (s *Server) receiptOperations() []operation { return nil }
