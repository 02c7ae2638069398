package translate

// Transform URNs.
const (
	URNImpulse        = "beam:transform:impulse:v1"
	URNParDo          = "beam:transform:pardo:v1"
	URNFlatten        = "beam:transform:flatten:v1"
	URNGBK            = "beam:transform:group_by_key:v1"
	URNWindowInto     = "beam:transform:window_into:v1"
	URNMapWindows     = "beam:transform:map_windows:v1"
	URNMergeWindows   = "beam:transform:merge_windows:v1"
	URNToString       = "beam:transform:to_string:v1"
	URNCombinePerKey  = "beam:transform:combine_per_key:v1"
	URNReshuffle      = "beam:transform:reshuffle:v1"
	URNPairWithRestr  = "beam:transform:sdf_pair_with_restriction:v1"
	URNSplitAndSize   = "beam:transform:sdf_split_and_size_restrictions:v1"
	URNProcessSized   = "beam:transform:sdf_process_sized_element_and_restrictions:v1"
	URNTruncateSized  = "beam:transform:sdf_truncate_sized_restrictions:v1"
	URNCombinePGBKCV  = "beam:transform:combine_per_key_precombine:v1"
	URNCombineMerge   = "beam:transform:combine_per_key_merge_accumulators:v1"
	URNCombineExtract = "beam:transform:combine_per_key_extract_outputs:v1"
	URNCombineGrouped = "beam:transform:combine_grouped_values:v1"
	URNCombineConvert = "beam:transform:combine_per_key_convert_to_accumulators:v1"

	URNDataSource = "beam:runner:source:v1"
	URNDataSink   = "beam:runner:sink:v1"

	URNSideIterable = "beam:side_input:iterable:v1"
	URNSideMultimap = "beam:side_input:multimap:v1"

	URNGlobalWindows  = "beam:window_fn:global_windows:v1"
	URNFixedWindows   = "beam:window_fn:fixed_windows:v1"
	URNSlidingWindows = "beam:window_fn:sliding_windows:v1"
	URNSessions       = "beam:window_fn:session_windows:v1"

	URNReqSplittable   = "beam:requirement:pardo:splittable_dofn:v1"
	URNReqStateful     = "beam:requirement:pardo:stateful:v1"
	URNReqFinalization = "beam:requirement:pardo:finalization:v1"
	URNReqTimeSorted   = "beam:requirement:pardo:time_sorted_input:v1"
	URNReqStableInput  = "beam:requirement:pardo:stable_input:v1"
	// URNReqWindowExpiry: a ParDo's on_window_expiration_timer_family_spec
	// must be read (Beam's OnWindowExpiration).
	URNReqWindowExpiry = "beam:requirement:pardo:on_window_expiration:v1"
)
