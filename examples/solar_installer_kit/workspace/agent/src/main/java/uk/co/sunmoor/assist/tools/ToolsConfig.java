package uk.co.sunmoor.assist.tools;

import org.springframework.ai.tool.ToolCallbackProvider;
import org.springframework.ai.tool.method.MethodToolCallbackProvider;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@Configuration
public class ToolsConfig {

    @Bean
    ToolCallbackProvider supportTools(BookHomeSurveyTool survey, GetSystemStatusTool status,
                                      RaiseServiceTicketTool tickets, UpdateExportDetailsTool export) {
        return MethodToolCallbackProvider.builder()
                .toolObjects(survey, status, tickets, export)
                .build();
    }
}
