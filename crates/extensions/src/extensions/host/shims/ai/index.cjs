// pi-rpc extension host: the names of pi-ai's modules (`pi-ai`,
// `pi-ai/compat`, `pi-ai/models`, `pi-ai/oauth`), each exactly as pi 1.6.0
// exports them (tests/extension-host/shims_match_pi.mjs compares the lists),
// from the host's own implementations in this directory.

"use strict";

const parts = [
	require("./stream.cjs"),
	require("./transcript.cjs"),
	require("./json.cjs"),
	require("./models.cjs"),
	require("./calls.cjs"),
	require("./misc.cjs"),
];
const all = Object.assign({}, ...parts);

/** The names pi's module exports, taken from the parts (each must exist). */
function pick(names) {
	const out = {};
	for (const name of names.trim().split(/\s+/)) {
		if (!(name in all)) throw new Error(`pi-rpc's extension host lacks ${name}`);
		out[name] = all[name];
	}
	return out;
}

const MAIN = `
	AI_TELEMETRY_SCHEMA AssistantMessageEventStream CACHE_WARMING_IDLE_CONTINUATION_PROBABILITY
	CACHE_WARMING_MAX_AGE_MS CACHE_WARMING_MAX_IDLE_AGE_MS CACHE_WARMING_MINIMUM_EXPECTED_SAVINGS
	DEFAULT_MAX_AGENT_RETRY_DELAY_MS EventStream InMemoryCredentialStore InMemoryModelsStore ModelsError
	PI_AI_VERSION PI_ATTRIBUTION StreamingJsonParser StringEnum ToolCallArgumentsStream
	appendAssistantMessageDiagnostic calculateCost clampThinkingLevel cleanupSessionResources
	collapseSystemMessages contentText createAssistantMessageDiagnostic createAssistantMessageEventStream
	createFauxCore createInitialSystemMessage createModels createProvider declarationsEqual
	defaultProviderAuthContext envApiKeyAuth evaluateCacheWarming extractDiagnosticError fauxAssistantMessage
	fauxProvider fauxText fauxThinking fauxToolCall formatThrownValue formatUserAgent getAttributionHeaders
	getCacheWarmingDelayMs getCacheWarmingRequestOptions getClientVersion getCurrentSystemMessage
	getCurrentSystemPrompt getCurrentTools getDeclaredTools getIdentityHeaders getInitialSystemMessage
	getModelType getOpenCodeSessionHeaders getOverflowPatterns getPromptCacheTtlMs getSupportedThinkingLevels
	getSystemMessageText getToolStateChanges hasApi hasNonAdditiveToolChanges hasToolRedefinitions
	isCacheWarmingReplayable isContextOverflow isModelType isRecoverableLength isRetryableAssistantError lazyApi
	lazyOAuth lazyStream mergeClientIdentity modelsAreEqual normalizeContext parseJsonWithRepair
	parseStreamingJson parseToolCallArguments registerSessionResourceCleanup renderSystemMessageUpdate repairJson
	resolveTranscript resolveTranscriptTools retryAssistantCall retryDelayMs toToolDeclaration uuidv7
	validateToolArguments validateToolCall withClientIdentity withoutInitialSystemMessage
`;
const COMPAT = `
	AI_TELEMETRY_SCHEMA ANTHROPIC_API_KEY_ENV ANTHROPIC_AUTH_TOKEN_ENV ANTHROPIC_FEDERATION_RULE_ID_ENV
	ANTHROPIC_IDENTITY_TOKEN_FILE_ENV ANTHROPIC_OAUTH_TOKEN_ENV ANTHROPIC_ORGANIZATION_ID_ENV
	ANTHROPIC_SERVICE_ACCOUNT_ID_ENV ANTHROPIC_WORKSPACE_ID_ENV AssistantMessageEventStream
	CACHE_WARMING_IDLE_CONTINUATION_PROBABILITY CACHE_WARMING_MAX_AGE_MS CACHE_WARMING_MAX_IDLE_AGE_MS
	CACHE_WARMING_MINIMUM_EXPECTED_SAVINGS DEFAULT_MAX_AGENT_RETRY_DELAY_MS EventStream InMemoryCredentialStore
	InMemoryModelsStore ModelsError PI_AI_VERSION PI_ATTRIBUTION StreamingJsonParser StringEnum
	ToolCallArgumentsStream anthropicMessagesApi appendAssistantMessageDiagnostic azureOpenAIResponsesApi
	bedrockConverseStreamApi calculateCost clampThinkingLevel cleanupSessionResources collapseSystemMessages
	complete completeSimple contentText createAssistantMessageDiagnostic createAssistantMessageEventStream
	createFauxCore createInitialSystemMessage createModels createProvider declarationsEqual
	defaultProviderAuthContext envApiKeyAuth evaluateCacheWarming extractDiagnosticError fauxAssistantMessage
	fauxProvider fauxText fauxThinking fauxToolCall findEnvKeys formatThrownValue formatUserAgent generateImages
	generateImagesOpenRouter getApiProvider getApiProviders getAttributionHeaders getCacheWarmingDelayMs
	getCacheWarmingRequestOptions getClientVersion getCurrentSystemMessage getCurrentSystemPrompt getCurrentTools
	getDeclaredTools getEnvApiKey getIdentityHeaders getImageModel getImageModels getImageProviders
	getImagesApiProvider getInitialSystemMessage getModel getModelType getModels getOpenCodeSessionHeaders
	getOverflowPatterns getPromptCacheTtlMs getProviders getSupportedThinkingLevels getSystemMessageText
	getToolStateChanges googleGenerativeAIApi googleVertexApi hasApi hasNonAdditiveToolChanges
	hasToolRedefinitions isCacheWarmingReplayable isContextOverflow isModelType isRecoverableLength
	isRetryableAssistantError lazyApi lazyOAuth lazyStream mergeClientIdentity mistralConversationsApi
	modelsAreEqual normalizeContext openAICodexResponsesApi openAICompletionsApi openAIResponsesApi
	parseJsonWithRepair parseStreamingJson parseToolCallArguments piMessagesApi registerApiProvider
	registerBuiltInApiProviders registerBuiltInImagesApiProviders registerFauxProvider registerImagesApiProvider
	registerSessionResourceCleanup renderSystemMessageUpdate repairJson resetApiProviders resolveTranscript
	resolveTranscriptTools retryAssistantCall retryDelayMs setBedrockProviderLoader setBedrockProviderModule
	stream streamAnthropic streamAzureOpenAIResponses streamGoogle streamGoogleVertex streamMistral
	streamOpenAICodexResponses streamOpenAICompletions streamOpenAIResponses streamSimple streamSimpleAnthropic
	streamSimpleAzureOpenAIResponses streamSimpleGoogle streamSimpleGoogleVertex streamSimpleMistral
	streamSimpleOpenAICodexResponses streamSimpleOpenAICompletions streamSimpleOpenAIResponses toToolDeclaration
	unregisterApiProviders uuidv7 validateToolArguments validateToolCall withClientIdentity
	withoutInitialSystemMessage
`;
const MODELS = `
	AI_TELEMETRY_SCHEMA ModelsError calculateCost clampThinkingLevel createModels createProvider getModelType
	getSupportedThinkingLevels hasApi isModelType modelsAreEqual
`;

module.exports = {
	main: () => pick(MAIN),
	compat: () => pick(COMPAT),
	models: () => pick(MODELS),
};
