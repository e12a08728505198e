import { Type, type Static } from 'typebox';

// A session's telemetry configuration (create and PATCH bodies, the session object), apart from
// the telemetry routes so that schemas.ts can use it without a cycle.

export const TELEMETRY_CATEGORIES = [
  'control',
  'connection',
  'system',
  'captcha',
  'console',
  'network',
  'page',
  'interaction',
  'screenshot',
] as const;
export type TelemetryCategory = (typeof TELEMETRY_CATEGORIES)[number];

const CategoryConfigSchema = Type.Object({ enabled: Type.Optional(Type.Boolean()) }, { additionalProperties: false });
const CategoriesSchema = Type.Object(
  Object.fromEntries(TELEMETRY_CATEGORIES.map((c) => [c, Type.Optional(CategoryConfigSchema)])) as Record<
    TelemetryCategory,
    ReturnType<typeof Type.Optional<typeof CategoryConfigSchema>>
  >,
  { additionalProperties: false },
);

/** The `telemetry` of a create or PATCH body. */
export const TelemetryRequestSchema = Type.Object(
  {
    enabled: Type.Optional(
      Type.Boolean({ description: 'true: capture the default set (control, connection, system, captcha) plus `browser`; false: none' }),
    ),
    browser: Type.Optional(CategoriesSchema),
  },
  { additionalProperties: false },
);
export type TelemetryRequest = Static<typeof TelemetryRequestSchema>;

/** A session's active configuration, as its API object shows it. */
export const TelemetryConfigSchema = Type.Object({
  browser: Type.Object(
    Object.fromEntries(TELEMETRY_CATEGORIES.map((c) => [c, Type.Object({ enabled: Type.Boolean() })])) as unknown as Record<
      TelemetryCategory,
      ReturnType<typeof Type.Object<{ enabled: ReturnType<typeof Type.Boolean> }>>
    >,
  ),
});
export type TelemetryConfig = Static<typeof TelemetryConfigSchema>;
