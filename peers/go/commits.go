package main

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type (
	kmsgOffsetCommitRequest  = kmsg.OffsetCommitRequest
	kmsgOffsetCommitResponse = kmsg.OffsetCommitResponse
)

// firstCommitError is the request's failure, or the first partition's error code, or nil.
func firstCommitError(resp *kmsg.OffsetCommitResponse, err error) error {
	if err != nil {
		return err
	}
	if resp == nil {
		return nil
	}
	for _, topic := range resp.Topics {
		for _, partition := range topic.Partitions {
			if failure := kerr.ErrorForCode(partition.ErrorCode); failure != nil {
				return failure
			}
		}
	}
	return nil
}
