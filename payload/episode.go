package payload

import "github.com/accountablework/accountable"

// EpisodeRecorded is the payload of episode.recorded: the episode as recorded.
type EpisodeRecorded = accountable.Episode
